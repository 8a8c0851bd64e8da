# One rank of the smoke test's NCCL all-reduce, started by smoke_child.py as
# `python -c <this file> RANK WORLD PORT PARAMS_JSON` on the job's interpreter. Rank r puts
# r + 1 in every element; after a sum all-reduce every element must be WORLD*(WORLD+1)/2.
# Prints one marked JSON line with its timings or its error. Self-contained, like smoke_child.py.
import datetime
import json
import sys
import time

MARKER = "GPUDOCTOR-SMOKE-JSON:"


def main():
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    params = json.loads(sys.argv[4])
    out = {"rank": rank}
    try:
        import torch
        import torch.distributed as dist

        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=params["timeout_s"]))
        n = params["mib"] * 1024 * 1024 // 4
        x = torch.full((n,), float(rank + 1), device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        out["correct"] = bool((x == world * (world + 1) / 2).all().item())
        seconds = []
        for _ in range(params["repeats"]):
            x.fill_(1.0)
            torch.cuda.synchronize()
            start = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            seconds.append(time.perf_counter() - start)
        out.update(seconds=seconds, bytes=n * 4)
        dist.destroy_process_group()
    except Exception as e:
        out["error"] = {"type": type(e).__name__, "message": str(e).strip()[:1500]}
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
