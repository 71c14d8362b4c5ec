"""How far to trust a prompt: stability across repeats, bias probes, perturbations, the review queue."""
