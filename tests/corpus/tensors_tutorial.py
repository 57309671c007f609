"""pytorch.org "Learn the Basics: Tensors": creation, attributes, indexing, joining, arithmetic,
in-place ops and the NumPy bridge; then a tiny model saved whole and reloaded."""

import io

import numpy as np
import torch
import torch.nn as nn

from _corpus import report, sines

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False

data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
np_array = np.array(data)
x_np = torch.from_numpy(np_array)
x_ones = torch.ones_like(x_data)
x_rand = torch.rand_like(x_data, dtype=torch.float)
shape = (2, 3,)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)

tensor = sines(3, 4).to(device)
attrs = [str(tensor.shape), str(tensor.dtype), str(tensor.device)]

tensor = torch.ones(4, 4)
tensor[:, 1] = 0
first_row, first_col, last_col = tensor[0], tensor[:, 0], tensor[..., -1]
t1 = torch.cat([tensor, tensor, tensor], dim=1)
st = torch.stack([tensor, tensor], dim=0)

y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)
torch.matmul(tensor, tensor.T, out=y3)
z1 = tensor * tensor
z2 = tensor.mul(tensor)
z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)

agg = tensor.sum()
agg_item = agg.item()
tensor.add_(5)

t = torch.ones(5)
n = t.numpy()
t.add_(1)
bridged = n.tolist()
n2 = np.ones(5)
t2 = torch.from_numpy(n2)
np.add(n2, 1, out=n2)

a = sines(2, 3, 4)
idx = a[[0, 1], [2, 0]]
fancy = a[range(2), [1, 2]]
mx, arg = a.max(dim=2)
sorted_vals, _ = torch.sort(a.flatten(), descending=True)
where = torch.where(a > 0, a, torch.zeros_like(a))
kept = a.masked_fill(a < 0, -1.0).sum(axis=1, keepdims=True)
flipped = torch.flip(a, dims=[0, 2])
chunks = [c.shape[1] for c in a.chunk(2, dim=1)]

# a tiny model, saved whole and loaded back
model = nn.Linear(4, 2).to(device)
with torch.no_grad():
    model.weight.copy_(sines(2, 4, scale=0.5))
    model.bias.fill_(0.1)
buffer = io.BytesIO()
torch.save(model, buffer)
buffer.seek(0)
loaded = torch.load(buffer, weights_only=False)
checkpoint = io.BytesIO()
torch.save({"model": model.state_dict(), "step": 3}, checkpoint)
checkpoint.seek(0)
state = torch.load(checkpoint)
with torch.autocast(device_type=device, dtype=torch.bfloat16):
    amp_out = loaded(a.reshape(-1, 4))

report(x_data=x_data, x_np=x_np, x_ones=x_ones, rand_shape=list(x_rand.shape),
       ones=ones_tensor, zeros=zeros_tensor, attrs=attrs, first_row=first_row,
       first_col=first_col, last_col=last_col, t1=t1, st_shape=list(st.shape), y1=y1, y2=y2,
       y3=y3, z1=z1, z2=z2, z3=z3, agg_item=agg_item, tensor=tensor, bridged=bridged,
       t2=t2, idx=idx, fancy=fancy, mx=mx, arg=arg, sorted_vals=sorted_vals, where=where,
       kept=kept, flipped=flipped, chunks=chunks, loaded_type=type(loaded).__name__,
       step=state["step"], amp_dtype=str(amp_out.dtype), amp_out=amp_out,
       loaded_bias=loaded.bias)
