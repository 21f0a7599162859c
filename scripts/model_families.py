"""Small networks of the families scripts/model_suite.py's torchvision models
lack (issue 35), built from torch.nn layers with seeded weights, each small
enough to export and check in seconds:

    video_conv3d        3-D convolutions, BatchNorm3d, MaxPool3d (video clips)
    aspp_segmentation   atrous (dilated) convolutions in an ASPP head, global
                        pooling, bilinear Resize back to the input size
    unet_transpose      an encoder-decoder whose decoder upsamples with
                        ConvTranspose2d, with skip connections
    audio_frontend      Conv1d feature extractor with GroupNorm (exported as
                        InstanceNormalization) and GELU, then a GRU
    attention_variants  causal self-attention (a triangular mask), windowed
                        attention and cross-attention, the attention written
                        with torch.einsum (exported as Einsum), L2-normalized
                        queries and keys (cosine attention)
    spatial_sampling    a spatial transformer (affine_grid + grid_sample:
                        GridSample), InstanceNorm2d, RoiAlign over fixed boxes

build(name, torch, torchvision) returns the module in eval mode;
FAMILIES gives each one's (family, input shape at batch 1, input kind, opset).
training_module(name, torch, torchvision) returns it for training
(scripts/make_models.py's training exports, benchmarks/training), its output
as cross-entropy logits; TRAINING gives each one's classes and label shape
per sample (segmentation: a class per pixel; attention: one per token).
"""

FAMILIES = {
    "video_conv3d": ("video (Conv3d)", [1, 3, 8, 56, 56], "video", 14),
    "aspp_segmentation": ("segmentation (atrous ASPP, Resize)", [1, 3, 96, 96], "image", 14),
    "unet_transpose": ("encoder-decoder (ConvTranspose)", [1, 3, 64, 64], "image", 14),
    "audio_frontend": ("audio (Conv1d, GroupNorm, GELU, GRU)", [1, 1, 8000], "audio", 14),
    "attention_variants": ("attention (causal, windowed, cross; Einsum)", [1, 64, 96],
                           "sequence", 14),
    "spatial_sampling": ("GridSample, InstanceNorm, RoiAlign", [1, 3, 64, 64], "image", 16),
}

TRAINING = {
    "video_conv3d": (10, []),
    "aspp_segmentation": (8, [96, 96]),
    "unet_transpose": (2, [64, 64]),
    "audio_frontend": (12, []),
    "attention_variants": (96, [64]),
    "spatial_sampling": (5, []),
}


def training_module(name, torch, torchvision):
    """The family's module whose output is cross_entropy's logits (classes on axis 1)."""
    net = build(name, torch, torchvision)
    if name != "attention_variants":
        return net

    class TokenLogits(torch.nn.Module):  # (N, tokens, 96) -> (N, 96 classes, tokens)
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x).transpose(1, 2)

    return TokenLogits()


def build(name, torch, torchvision):
    nn, F = torch.nn, torch.nn.functional

    class Video(nn.Module):
        def __init__(self):
            super().__init__()
            block = lambda i, o, s: [nn.Conv3d(i, o, 3, stride=s, padding=1), nn.BatchNorm3d(o),
                                     nn.ReLU()]
            self.features = nn.Sequential(*block(3, 16, 1), nn.MaxPool3d((1, 2, 2)),
                                          *block(16, 32, 2), *block(32, 32, 1),
                                          nn.AdaptiveAvgPool3d(1))
            self.classifier = nn.Linear(32, 10)

        def forward(self, x):
            return self.classifier(self.features(x).flatten(1))

    class Aspp(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32),
                                      nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2, padding=1),
                                      nn.ReLU())
            self.branches = nn.ModuleList(
                [nn.Conv2d(64, 32, 1)] +
                [nn.Conv2d(64, 32, 3, padding=d, dilation=d) for d in (2, 4, 6)])
            self.pooled = nn.Conv2d(64, 32, 1)
            self.head = nn.Sequential(nn.Conv2d(160, 32, 1), nn.ReLU(), nn.Conv2d(32, 8, 1))

        def forward(self, x):
            f = self.stem(x)
            pooled = self.pooled(F.adaptive_avg_pool2d(f, 1)).expand(-1, -1, f.shape[2], f.shape[3])
            y = self.head(torch.cat([b(f) for b in self.branches] + [pooled], 1))
            return F.interpolate(y, size=x.shape[2:], mode="bilinear", align_corners=False)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            conv = lambda i, o: nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o),
                                              nn.ReLU())
            self.down1, self.down2, self.bottom = conv(3, 16), conv(16, 32), conv(32, 64)
            self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
            self.dec2 = conv(64, 32)
            self.up1 = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
            self.dec1 = conv(32, 16)
            self.out = nn.Conv2d(16, 2, 1)

        def forward(self, x):
            d1 = self.down1(x)
            d2 = self.down2(F.max_pool2d(d1, 2))
            b = self.bottom(F.max_pool2d(d2, 2))
            u2 = self.dec2(torch.cat([self.up2(b), d2], 1))
            u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
            return self.out(u1)

    class Audio(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv1d(1, 32, 10, stride=5), nn.GroupNorm(32, 32),
                                      nn.GELU(), nn.Conv1d(32, 64, 3, stride=2), nn.GroupNorm(8, 64),
                                      nn.GELU(), nn.Conv1d(64, 64, 3, stride=2), nn.GELU())
            self.rnn = nn.GRU(64, 64, batch_first=True)
            self.classifier = nn.Linear(64, 12)

        def forward(self, x):
            h, _ = self.rnn(self.conv(x).transpose(1, 2))
            return self.classifier(h[:, -1])

    class Attention(nn.Module):
        """Causal self-attention, attention within windows of 16 and
        cross-attention to a projected memory, each with 4 heads of 24,
        queries and keys L2-normalized (cosine attention)."""

        def __init__(self, d=96, heads=4):
            super().__init__()
            self.h = heads
            self.qkv = nn.ModuleList([nn.Linear(d, 3 * d) for _ in range(2)])
            self.q, self.kv = nn.Linear(d, d), nn.Linear(d, 2 * d)
            self.memory = nn.Linear(d, d)
            self.out = nn.ModuleList([nn.Linear(d, d) for _ in range(3)])
            self.norm = nn.ModuleList([nn.LayerNorm(d) for _ in range(3)])
            self.scale = nn.Parameter(torch.tensor(8.0))

        def heads(self, t):
            b, n, d = t.shape
            return t.reshape(b, n, self.h, d // self.h)

        def attend(self, q, k, v, mask=None):
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            a = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.scale
            if mask is not None:
                a = a.masked_fill(mask, -1e4)
            o = torch.einsum("bhqk,bkhd->bqhd", a.softmax(-1), v)
            return o.reshape(o.shape[0], o.shape[1], -1)

        def forward(self, x):
            n = x.shape[1]
            q, k, v = (self.heads(t) for t in self.qkv[0](self.norm[0](x)).chunk(3, -1))
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
            x = x + self.out[0](self.attend(q, k, v, causal))
            w = self.qkv[1](self.norm[1](x)).reshape(x.shape[0] * n // 16, 16, -1)
            q, k, v = (self.heads(t) for t in w.chunk(3, -1))
            x = x + self.out[1](self.attend(q, k, v).reshape(x.shape))
            memory = self.memory(x.mean(1, keepdim=True).expand(-1, 8, -1))
            k, v = (self.heads(t) for t in self.kv(memory).chunk(2, -1))
            return x + self.out[2](self.attend(self.heads(self.q(self.norm[2](x))), k, v))

    class Sampling(nn.Module):
        def __init__(self):
            super().__init__()
            self.localize = nn.Sequential(nn.Conv2d(3, 8, 5, stride=4), nn.ReLU(),
                                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 6))
            self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.InstanceNorm2d(16,
                                          affine=True), nn.ReLU())
            # aligned=True: torch 1.13's opset-16 exporter drops
            # coordinate_transformation_mode, so an aligned=False model file
            # would mean half_pixel (aligned=True) to every runtime.
            self.pool = torchvision.ops.RoIAlign((4, 4), spatial_scale=1.0, sampling_ratio=2,
                                                 aligned=True)
            self.register_buffer("boxes", torch.tensor([[0.0, 4, 4, 40, 40], [0.0, 16, 8, 60, 56],
                                                        [0.0, 0, 30, 30, 63]]))
            self.classifier = nn.Linear(3 * 16 * 16, 5)

        def forward(self, x):
            theta = self.localize(x).reshape(-1, 2, 3) * 0.1 + torch.tensor(
                [[1.0, 0, 0], [0, 1.0, 0]], dtype=x.dtype)
            # affine_grid by hand (its exporter needs opset 20): pixel centres in
            # [-1, 1], mapped through theta.
            h, w = x.shape[2], x.shape[3]
            ys, xs = torch.meshgrid((torch.arange(h, dtype=x.dtype) * 2 + 1) / h - 1,
                                    (torch.arange(w, dtype=x.dtype) * 2 + 1) / w - 1,
                                    indexing="ij")
            base = torch.stack([xs, ys, torch.ones_like(xs)], -1).reshape(1, h * w, 3)
            grid = torch.matmul(base, theta.transpose(1, 2)).reshape(-1, h, w, 2)
            f = self.features(F.grid_sample(x, grid, align_corners=False))
            n = x.shape[0]  # the same three boxes in every image of the batch
            index = torch.arange(n).unsqueeze(1).expand(-1, 3).reshape(-1, 1).to(x.dtype)
            boxes = torch.cat([index, self.boxes[:, 1:].repeat(n, 1)], 1)
            return self.classifier(self.pool(f, boxes).reshape(n, -1))

    torch.manual_seed(0)
    model = {"video_conv3d": Video, "aspp_segmentation": Aspp, "unet_transpose": UNet,
             "audio_frontend": Audio, "attention_variants": Attention,
             "spatial_sampling": Sampling}[name]()
    return model.eval()
