"""NMT 20-best lists and k-best MIRA reranking (Calixto Table 3)."""
