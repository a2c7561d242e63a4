"""Write resources/profiling/sample_trace.json, the trace figure 13.1 opens as an example.

    python tools/regenerate/sample_trace.py [--out PATH]

The trace is synthetic: one data-parallel training step on rank 0 of two, written by
hand in the layout torch.profiler's Kineto back end gives a `.pt.trace.json` (a CPU-only
torch profile has no GPU streams, so it cannot show them). The same input always writes
the same bytes. Its numbers are worked out by hand in tests/test_profiling_puzzle.py and
in Lesson 13, section 1.

Where each field's meaning comes from (Kineto's JSON output, as read by Holistic Trace
Analysis, facebookresearch/HolisticTraceAnalysis, and its test traces):
  traceEvents       the list of events; schemaVersion and distributedInfo (backend, rank,
                    world_size) beside it
  ph                "X" a complete event (ts, dur), "M" metadata, "s"/"f" a flow's start
                    and end ("ac2g": from a CPU launch to its GPU kernel, id = the
                    correlation number)
  ts, dur           microseconds
  pid, tid          the CPU events: the process id and thread id of the Python process;
                    the GPU events: pid = the device index, tid = the CUDA stream
  cat               cpu_op (an ATen operator), user_annotation (record_function,
                    ProfilerStep#N, the DataLoader's next), cuda_runtime (a CUDA runtime
                    call: cudaLaunchKernel, cudaMemcpyAsync, cudaStreamSynchronize),
                    kernel, gpu_memcpy
  args.correlation  the same number on a runtime call and the GPU work it launched
  args.stream, args.device   the GPU event's stream and device

The step (times in µs from its start; the CPU thread first, then the GPU's two streams):
  CPU   waits 50 for the DataLoader, copies the batch (cudaMemcpyAsync), launches three
        forward kernels, blocks in cudaStreamSynchronize under aten::item (the loss) until
        the forward ends, runs Python until 260, then launches three backward kernels, two
        NCCL all-reduces and the optimizer kernel
  stream 7    the copy (20), three forward matmuls (50 each), three backward ones (80
              each), the optimizer's multi-tensor kernel (30)
  stream 20   the all-reduce of bucket 1 right after B1 (100, overlapping B2 and B3), and
              of bucket 2, which waits 20 for the other rank after B3 ends (80)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "resources" / "profiling" / "sample_trace.json"
PID, TID = 4242, 4242  # the Python process and its main thread
DEVICE, COMPUTE_STREAM, NCCL_STREAM = 0, 7, 20
BASE_US = 1_000_000.0  # the profile's clock when the step starts (µs)

# (name, start, duration) on the CPU thread, each with its category.
CPU_SPANS = [
    ("ProfilerStep#1", 0, 640, "user_annotation"),
    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 50,
     "user_annotation"),
    ("aten::copy_", 50, 10, "cpu_op"),
    ("aten::linear", 60, 10, "cpu_op"),
    ("aten::linear", 70, 10, "cpu_op"),
    ("aten::linear", 80, 10, "cpu_op"),
    ("aten::item", 90, 142, "cpu_op"),
    ("cudaStreamSynchronize", 92, 138, "cuda_runtime"),
    ("autograd::engine::evaluate_function: MmBackward0", 260, 10, "cpu_op"),
    ("autograd::engine::evaluate_function: MmBackward0", 270, 10, "cpu_op"),
    ("nccl:all_reduce", 280, 10, "cpu_op"),
    ("autograd::engine::evaluate_function: MmBackward0", 290, 10, "cpu_op"),
    ("nccl:all_reduce", 300, 10, "cpu_op"),
    ("Optimizer.step#AdamW.step", 310, 10, "cpu_op"),
]
# (runtime call, its start, GPU event, its category, stream, GPU start, GPU duration):
# each launch lasts 6 µs, 2 µs into the operator that makes it.
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
LAUNCHES = [
    ("cudaMemcpyAsync", 52, "Memcpy HtoD (Pinned -> Device)", "gpu_memcpy",
     COMPUTE_STREAM, 58, 20),
    ("cudaLaunchKernel", 62, GEMM, "kernel", COMPUTE_STREAM, 78, 50),
    ("cudaLaunchKernel", 72, GEMM, "kernel", COMPUTE_STREAM, 128, 50),
    ("cudaLaunchKernel", 82, GEMM, "kernel", COMPUTE_STREAM, 178, 50),
    ("cudaLaunchKernel", 262, GEMM, "kernel", COMPUTE_STREAM, 268, 80),
    ("cudaLaunchKernel", 272, GEMM, "kernel", COMPUTE_STREAM, 348, 80),
    ("cudaLaunchKernel", 282, ALLREDUCE, "kernel", NCCL_STREAM, 348, 100),
    ("cudaLaunchKernel", 292, GEMM, "kernel", COMPUTE_STREAM, 428, 80),
    ("cudaLaunchKernel", 302, ALLREDUCE, "kernel", NCCL_STREAM, 528, 80),
    ("cudaLaunchKernel", 312, "void at::native::multi_tensor_apply_kernel<AdamW>",
     "kernel", COMPUTE_STREAM, 608, 30),
]
LAUNCH_US = 6


def events() -> list[dict]:
    """The trace's events in a fixed order."""
    out: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": 0,
         "args": {"name": "python3"}},
        {"name": "thread_name", "ph": "M", "pid": PID, "tid": TID,
         "args": {"name": "thread 4242 (python3)"}},
        {"name": "process_name", "ph": "M", "pid": DEVICE, "tid": 0,
         "args": {"name": "GPU 0"}},
        {"name": "process_sort_index", "ph": "M", "pid": DEVICE, "tid": 0,
         "args": {"sort_index": 1}},
    ]
    for stream in (COMPUTE_STREAM, NCCL_STREAM):
        out.append({"name": "thread_name", "ph": "M", "pid": DEVICE, "tid": stream,
                    "args": {"name": f"stream {stream}"}})
    for external, (name, start, duration, category) in enumerate(CPU_SPANS, 1):
        out.append({"ph": "X", "cat": category, "name": name, "pid": PID, "tid": TID,
                    "ts": BASE_US + start, "dur": duration,
                    "args": {"External id": external}})
    for correlation, (call, start, name, category, stream, gpu_start, gpu_duration) in (
            enumerate(LAUNCHES, 1)):
        out += [
            {"ph": "X", "cat": "cuda_runtime", "name": call, "pid": PID, "tid": TID,
             "ts": BASE_US + start, "dur": LAUNCH_US,
             "args": {"correlation": correlation}},
            {"ph": "X", "cat": category, "name": name, "pid": DEVICE, "tid": stream,
             "ts": BASE_US + gpu_start, "dur": gpu_duration,
             "args": {"device": DEVICE, "stream": stream, "correlation": correlation}},
            {"ph": "s", "id": correlation, "pid": PID, "tid": TID,
             "ts": BASE_US + start, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": correlation, "pid": DEVICE, "tid": stream,
             "ts": BASE_US + gpu_start, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        ]
    return out


def trace_text() -> str:
    """The file's text: one event per line, so a diff shows what changed."""
    head = ('{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": 0, '
            '"world_size": 2}, "displayTimeUnit": "ms",\n"traceEvents": [\n')
    return head + ",\n".join(json.dumps(event) for event in events()) + "\n]}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    path = parser.parse_args().out
    path.write_text(trace_text(), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
