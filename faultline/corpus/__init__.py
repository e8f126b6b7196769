"""The incident corpus: what an incident looks like from the outside (symptoms, tickets) and its ground truth."""
