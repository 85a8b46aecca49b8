"""Image-sentence ranking variants: training, evaluation, paper tables and figures."""
