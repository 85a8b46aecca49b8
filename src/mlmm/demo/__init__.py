"""The demo world: rendered scenes with multilingual captions in the Multi30K layout.

See docs/demo_world.md. ``generate_world(out, seed, images)`` writes one;
``generate_coco_world(out, seed, images)`` writes its MS-COCO counterpart (mlmm.demo.coco).
"""

from mlmm.demo.coco import generate_coco_world
from mlmm.demo.world import generate_world

__all__ = ["generate_coco_world", "generate_world"]
