"""Image features: one array per (dataset, split, backbone)."""
