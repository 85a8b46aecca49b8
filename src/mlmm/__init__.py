"""mlmm: regenerate the results of four papers on multilingual multimodal embeddings."""

__version__ = "0.5.0"
