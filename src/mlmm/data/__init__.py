"""Multi30K readers and vocabularies (the data stage)."""
