"""pytorch.org "Training a Classifier" (CIFAR-10), on synthetic 3x32x32 images."""

import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, Dataset

from _corpus import init_, labels, report, sines

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.benchmark = True
classes = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


class SyntheticCIFAR(Dataset):
    def __init__(self, n, phase):
        self.images = sines(n, 3, 32, 32, phase=phase)
        self.targets = labels(n, 10, phase=phase)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.images[i], int(self.targets[i])


trainloader = DataLoader(SyntheticCIFAR(40, 0.0), batch_size=4, shuffle=False, num_workers=0)
testloader = DataLoader(SyntheticCIFAR(12, 3.0), batch_size=4, shuffle=False)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


net = init_(Net()).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

losses = []
for epoch in range(2):
    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        inputs, targets = data[0].to(device), data[1].to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    losses.append(running_loss / len(trainloader))

with tempfile.TemporaryDirectory() as tmp:
    PATH = os.path.join(tmp, "cifar_net.pth")
    torch.save(net.state_dict(), PATH)
    net2 = Net()
    net2.load_state_dict(torch.load(PATH, weights_only=True))
    torch.save(net, os.path.join(tmp, "whole.pth"))
    torch.serialization.add_safe_globals([Net])
    net3 = torch.load(os.path.join(tmp, "whole.pth"), weights_only=False)

correct = 0
total = 0
correct_pred = {classname: 0 for classname in classes}
with torch.no_grad():
    for images, targets in testloader:
        outputs = net2(images)
        _, predicted = torch.max(outputs, 1)
        total += targets.size(0)
        correct += (predicted == targets).sum().item()
        for label, prediction in zip(targets, predicted):
            if label == prediction:
                correct_pred[classes[label]] += 1
    images, _ = next(iter(testloader))
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        amp_out = net3(images)

report(losses=losses, correct=correct, total=total, correct_pred=correct_pred,
       amp_dtype=str(amp_out.dtype), amp_out=amp_out, whole_equal=torch.equal(net3(images), net(images)))
