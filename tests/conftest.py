import torch

# Tiny models run fastest on one thread, and the machine is shared with other jobs.
torch.set_num_threads(1)
