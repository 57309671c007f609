"""pytorch.org "Automatic Mixed Precision" recipe: autocast + GradScaler in the default loop,
with gradient clipping (unscale_), saving and restoring the scaler, and inference under
autocast; on the CPU with bfloat16, and a float16 GradScaler on the CPU."""

import io

import torch

from _corpus import init_, report, sines


def make_model(in_size, out_size, num_layers):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return init_(torch.nn.Sequential(*tuple(layers)))


device = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cudnn.benchmark = True
amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16
batch_size, in_size, out_size, num_layers, num_batches, epochs = 8, 16, 4, 3, 4, 2
data = [sines(batch_size, in_size, phase=i).to(device) for i in range(num_batches)]
targets = [sines(batch_size, out_size, phase=10 + i).to(device) for i in range(num_batches)]
loss_fn = torch.nn.MSELoss().cuda() if device == "cuda" else torch.nn.MSELoss()

results = {}
for use_amp in (False, True):
    net = make_model(in_size, out_size, num_layers).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler(device, enabled=use_amp)
    losses, dtypes = [], set()
    for epoch in range(epochs):
        for input, target in zip(data, targets):
            with torch.autocast(device_type=device, dtype=amp_dtype, enabled=use_amp):
                output = net(input)
                loss = loss_fn(output, target)
            dtypes.add(str(output.dtype))
            dtypes.add(str(loss.dtype))
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
    checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict()}
    buf = io.BytesIO()
    torch.save(checkpoint, buf)
    buf.seek(0)
    checkpoint = torch.load(buf)
    net2 = make_model(in_size, out_size, num_layers).to(device)
    net2.load_state_dict(checkpoint["model"])
    scaler2 = torch.amp.GradScaler(device, enabled=use_amp)
    scaler2.load_state_dict(checkpoint["scaler"])
    buf = io.BytesIO()
    torch.save(net2, buf)
    buf.seek(0)
    whole = torch.load(buf, weights_only=False)
    with torch.no_grad(), torch.autocast(device_type=device, dtype=amp_dtype):
        inference = whole(data[0][:2])
    results["amp" if use_amp else "fp32"] = dict(
        losses=losses, dtypes=sorted(dtypes), scale=scaler2.get_scale(),
        scaler_state=checkpoint["scaler"], inference_dtype=str(inference.dtype),
        inference=inference, weight=net[0].weight[0, :4])

# float16 scaling on the CPU: scale, skip a step whose gradients overflow, back off
net = make_model(in_size, out_size, 2)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
scales, weights = [], []
for step in range(5):
    with torch.autocast(device_type="cpu", dtype=torch.float16):
        loss = loss_fn(net(data[step % num_batches]), targets[step % num_batches])
    scaler.scale(loss).backward()
    if step == 2:
        net[0].weight.grad[0, 0] = float("inf")
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    scales.append(scaler.get_scale())
    weights.append(net[0].weight[0, 0].item())
results["cpu_fp16"] = dict(scales=scales, weights=weights, loss_dtype=str(loss.dtype))
report(**results)
