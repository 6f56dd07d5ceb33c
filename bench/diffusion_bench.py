"""Diffusion UNets on the CPU, Weft beside ONNX Runtime, PyTorch eager and torch.compile in one
run (cnn_bench.py's harness): diffusers' UNet2DModel as DDPM uses it (ResNet blocks of GroupNorm,
SiLU and 3x3 convolutions with the timestep's sinusoidal embedding added per channel,
self-attention at 16x16, nearest upsampling and skip concatenations) on a 64x64 image, and a
small UNet2DConditionModel as Stable Diffusion's (cross-attention to 77 text tokens, heads of 32)
on a 32x32 latent; one denoising step, the timestep an input. Random weights, exported with
torch.onnx.export's defaults; Weft's output checked against PyTorch's first. Needs diffusers
(bench/run.sh installs it in bench/.venv).

Usage: PYTHONPATH=build/python bench/.venv/bin/python bench/diffusion_bench.py [--rounds 2] [--iters 20] [--write]
--write stores bench/diffusion_results.json, which run_bench.py puts in docs/benchmarks.md.
"""

import torch

from cnn_bench import peer_table, table_main
from ort_options import described


class Step(torch.nn.Module):
    """One UNet call, its sample as the output."""

    def __init__(self, unet):
        super().__init__()
        self.unet = unet

    def forward(self, *inputs):
        return self.unet(*inputs).sample


def ddpm():
    from diffusers import UNet2DModel
    return Step(UNet2DModel(sample_size=64, in_channels=3, out_channels=3, layers_per_block=2,
                            block_out_channels=(64, 128, 128, 256),
                            down_block_types=("DownBlock2D", "DownBlock2D", "AttnDownBlock2D", "DownBlock2D"),
                            up_block_types=("UpBlock2D", "AttnUpBlock2D", "UpBlock2D", "UpBlock2D")))


def sd():
    from diffusers import UNet2DConditionModel
    return Step(UNet2DConditionModel(sample_size=32, in_channels=4, out_channels=4, layers_per_block=1,
                                     block_out_channels=(64, 128), cross_attention_dim=128,
                                     attention_head_dim=(2, 4),
                                     down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                     up_block_types=("UpBlock2D", "CrossAttnUpBlock2D")))


MODELS = {
    "ddpm_unet_64": (ddpm, lambda: (torch.randn(1, 3, 64, 64), torch.tensor([10]))),
    "sd_unet_32": (sd, lambda: (torch.randn(1, 4, 32, 32), torch.tensor([999]), torch.randn(1, 77, 128))),
}


def markdown(r):
    lines = ["## Diffusion UNets on the CPU", "",
             f"`bench/diffusion_bench.py`, measured {r['date']} on {r['machine']}, {r['threads']} threads: one "
             "denoising step of diffusers' UNet2DModel as DDPM uses it (GroupNorm, SiLU, 3x3 convolutions with "
             "the timestep's embedding added per channel, self-attention at 16x16; 64x64 image) and of a small "
             "UNet2DConditionModel as Stable Diffusion's (cross-attention to 77 text tokens, heads of 32; 32x32 "
             "latent), the timestep an input; random weights, exported by PyTorch "
             f"{r['pytorch']}. Weft's Python module, ONNX Runtime {r['onnxruntime']} (CPU execution provider, "
             f"{described(r)}), PyTorch eager and `torch.compile` (compile time not included), all in one "
             f"process; {r['rounds']} rounds, each entry the system's lowest median of {r['iters']} runs, "
             "Weft's output checked against PyTorch's first. Ratios are peer time / Weft time (above 1: Weft "
             "is faster).", ""]
    return lines + peer_table(r, "diffusion_results.json")


def main():
    table_main(MODELS, markdown, "diffusion_results.json")


if __name__ == "__main__":
    main()
