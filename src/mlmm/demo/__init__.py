"""The demo world: rendered scenes with multilingual captions in the Multi30K layout.

See docs/demo_world.md. ``generate_world(out, seed, images)`` writes one.
"""

from mlmm.demo.world import generate_world

__all__ = ["generate_world"]
