"""mlmm: regenerate the results of four papers on multilingual multimodal embeddings."""

__version__ = "0.4.0"
