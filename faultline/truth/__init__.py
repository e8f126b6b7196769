"""What really happened and the words for it: an incident's ground truth, the root-cause taxonomy (NIKA's fault
labels and the operator/physical events) and the 0-5 accuracy rubric every method is scored with."""
