# Generates passes_resnet/: a small ResNet-style network exported by PyTorch
# (eval mode, BatchNormalization kept: TrainingMode.PRESERVE) with one input
# and the PyTorch output, for tests/network/passes_test.cc.
#   /usr/bin/python3 tests/network/data/make_passes_resnet.py tests/network/data/passes_resnet
import torch, torch.nn as nn, onnx, numpy as np, os, sys
torch.manual_seed(0)
class Block(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.c1=nn.Conv2d(c,c,3,padding=1,bias=False); s.b1=nn.BatchNorm2d(c)
        s.c2=nn.Conv2d(c,c,3,padding=1,bias=False); s.b2=nn.BatchNorm2d(c)
    def forward(s,x):
        y=torch.relu(s.b1(s.c1(x)))
        y=s.b2(s.c2(y))
        return torch.relu(y+x)
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem=nn.Conv2d(3,8,3,padding=1); s.bn=nn.BatchNorm2d(8)
        s.block=Block(8); s.drop=nn.Dropout(0.3)
        s.fc=nn.Linear(8,5); s.bnf=nn.BatchNorm1d(5)
    def forward(s,x):
        x=torch.relu(s.bn(s.stem(x)))
        x=s.block(x)
        x=x.mean(dim=(2,3))
        x=s.drop(x)
        x=s.bnf(s.fc(x))
        return torch.clamp(x, -0.5, 0.5)
net=Net()
for m in net.modules():
    if isinstance(m,(nn.BatchNorm2d,nn.BatchNorm1d)):
        m.running_mean.uniform_(-0.5,0.5); m.running_var.uniform_(0.5,2); m.weight.data.uniform_(0.5,1.5); m.bias.data.uniform_(-0.5,0.5)
net.eval()
x=torch.randn(2,3,8,8)
out=sys.argv[1]
os.makedirs(out+'/test_data_set_0',exist_ok=True)
torch.onnx.export(net,x,out+'/model.onnx',opset_version=13,do_constant_folding=False,training=torch.onnx.TrainingMode.PRESERVE,keep_initializers_as_inputs=False,input_names=['input'],output_names=['output'])
with torch.no_grad(): y=net(x)
from onnx import numpy_helper
open(out+'/test_data_set_0/input_0.pb','wb').write(numpy_helper.from_array(x.numpy(),'input').SerializeToString())
open(out+'/test_data_set_0/output_0.pb','wb').write(numpy_helper.from_array(y.numpy(),'output').SerializeToString())
m=onnx.load(out+'/model.onnx'); print([n.op_type for n in m.graph.node]); print(os.path.getsize(out+'/model.onnx'))
