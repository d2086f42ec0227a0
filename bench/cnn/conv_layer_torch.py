"""conv_layer_torch.py — PyTorch's side of bench_cuda's convolution-layer figure: the same
step (y = conv(x, w), NHWC / HWIO 3x3 SAME, N=32 56x56 64->64, and both gradients against a
cotangent) with torch.nn.functional.conv2d on channels_last tensors (cuDNN), f32 (no TF32)
and bf16, the median of several timed steps after warm-up, synchronised each time as
kiln_executable_run returns once the device is done. Prints one RESULT line per dtype in
bench_cuda's form, so scripts/gpu-check.sh puts them side by side.

Usage: python bench/cnn/conv_layer_torch.py [N HW C REPS]"""
import statistics
import sys
import time

import torch


def step_ms(n, hw, c, dtype, reps):
    dev = "cuda"
    x = torch.rand(n, c, hw, hw, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
    w = torch.rand(c, c, 3, 3, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
    ct = torch.rand(n, c, hw, hw, device=dev, dtype=dtype).to(memory_format=torch.channels_last)
    x.requires_grad_(True)
    w.requires_grad_(True)

    def once():
        y = torch.nn.functional.conv2d(x, w, padding=1)
        gx, gw = torch.autograd.grad(y, (x, w), ct)
        return y, gx, gw

    times = []
    for r in range(-3, reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        once()
        torch.cuda.synchronize()
        if r >= 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    given = [int(a) for a in sys.argv[1:5]]
    n, hw, c, reps = given + [32, 56, 64, 20][len(given):]
    if not torch.cuda.is_available():
        print("conv_layer_torch: no GPU")
        sys.exit(77)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    flops = 3 * 2.0 * n * hw * hw * c * c * 9
    for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        s = step_ms(n, hw, c, dtype, reps)
        print(f"RESULT conv layer step {name} (N={n} {hw}x{hw}, {c}->{c}, 3x3, fwd + both grads, "
              f"torch {torch.__version__} cuDNN): {s * 1e3:.3f} ms, {flops / s / 1e12:.1f} TFLOP/s",
              flush=True)


if __name__ == "__main__":
    main()
