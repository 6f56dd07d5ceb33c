"""What the tests that export PyTorch models share (models_test.py under Debian's PyTorch 1.13,
torch_export_test.py under PyPI's current one)."""
import torch


def randomize_batch_norms(model):
    """torchvision's default BatchNorm state is the identity, which leaves some outputs tiny;
    random statistics and affine parameters give every layer real work. Returns the model in
    eval mode."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g) * 0.1)
    return model.eval()


def redraw_zero_weights(model):
    """Weight matrices left all zero at initialization (ViT's classification head) drawn from
    N(0, 0.02): a zero output would make a comparison against PyTorch vacuous. Returns the model."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1 and not p.any():
                p.normal_(0, 0.02)
    return model
