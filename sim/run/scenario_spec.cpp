#include "sim/run/scenario_spec.h"

#include "sim/algo/strategy_names.h"

namespace gpunvme {

const ComponentSpec& scenario_spec() {
  static const ComponentSpec spec{
      "scenario",
      "A workload run on a topology: what the GPU threads read or write, and how they reach "
      "the SSDs.",
      {
          string_param("name", "unnamed", "short name of the scenario", "user [user-choice]"),
          string_param("doc", "", "one line describing the scenario", "user [user-choice]"),
          enum_param("kind", "microbenchmark", {"microbenchmark", "kv_cache", "graph", "gather"},
                     "scenario kind: microbenchmark (fio-style I/O loop), kv_cache (LLM decode "
                     "with the KV cache tiered over HBM, host DRAM and NVMe), graph (BFS over a "
                     "CSR graph on the SSDs through a GPU software cache), gather (embedding-style "
                     "random row lookups); fields of one kind are errors in another",
                     "fio vocabulary; seed 000 (KV tiering); BaM, ASPLOS 2023 (graph, gather) "
                     "[fio] [seed-000] [bam]"),
          enum_param("path", "gpu_initiated", {"gpu_initiated", "gds", "bounce"},
                     "who drives the I/O: gpu_initiated = GPU threads run the NVMe queues "
                     "(strategy fields); gds = a host core builds and submits each command and the "
                     "SSD DMAs straight into GPU memory; bounce = the SSD DMAs into a pinned host "
                     "buffer and a copy engine moves it to the GPU (the cpu node's costs apply to "
                     "both CPU paths)",
                     "seed 000 (the 8 steps of the CPU-mediated path, GPU-initiated path); seed "
                     "001 (GPUDirect Storage) [nvidia-gds] [seed-000] [seed-001]"),
          string_param("cpu", "",
                       "gds, bounce: id of the cpu node whose cores run the I/O (\"\" = the "
                       "socket of the host memory nearest the first SSD)",
                       "topology [topology-file]"),
          enum_param("request_origin", "gpu", {"gpu", "cpu"},
                     "gds, bounce: where requests start: gpu = GPU threads post each request to a "
                     "ring in host memory and wait for a completion flag (seed 000 steps 1 and "
                     "8); cpu = host threads issue them, as gdsio or fio do",
                     "seed 000 (GPU signals CPU); NVIDIA gdsio [nvidia-gds] [seed-000]"),
          enum_param("rw", "randread", {"randread", "read", "randwrite", "write", "randrw"},
                     "(microbenchmark) access pattern, as fio's rw; randrw mixes reads and "
                     "writes by rwmixread",
                     "fio vocabulary [fio]"),
          integer_param("rwmixread", "%", 50, 0, 100,
                        "(microbenchmark, rw = randrw) percentage of I/Os that are reads",
                        "fio's rwmixread (default 50) [fio]"),
          integer_param("bs", "B", 4096, 512, 2 << 20,
                        "bytes per I/O (a multiple of the namespace's LBA size)",
                        "fio vocabulary; 4 KiB is the common random-read unit (seed 003) [fio] "
                        "[seed-003]"),
          integer_param("iodepth", "", 1, 1, 4096,
                        "I/Os each thread keeps in flight: it submits this many, then waits "
                        "for all of them",
                        "fio vocabulary [fio]"),
          integer_param("threads", "", 1024, 1, 1 << 21, "GPU threads issuing I/O",
                        "seed 003: 270,336 threads on an H100 [seed-003]"),
          integer_param("ios", "", 20000, 1, 1e10, "total I/Os of the run",
                        "fio's number_ios [fio]"),
          integer_param("io_size", "B", 0, 0, 1e15,
                        "(microbenchmark) bytes the run transfers; when > 0 it replaces ios "
                        "with io_size / bs (a multiple of bs; 0 = use ios)",
                        "fio's io_size [fio]"),
          real_param("runtime_us", "us", 0.0, 0.0, 1e9,
                     "(microbenchmark) simulated time after which threads issue no more I/O "
                     "(counted from when the queues are ready; I/Os in flight complete): the "
                     "run ends at ios or runtime_us, whichever comes first (0 = no limit)",
                     "fio's runtime (seconds there; simulated microseconds here) [fio]"),
          bool_param("time_based", false,
                     "(microbenchmark) run for the whole runtime_us, however many I/Os that "
                     "takes (ios is then ignored); needs runtime_us > 0",
                     "fio's time_based [fio]"),
          enum_param("distribution", "uniform", {"uniform", "sequential", "zipf"},
                     "(microbenchmark, gather) where I/Os land: uniform random over the span, "
                     "each thread reading its own sequential stream, or Zipf-skewed with "
                     "zipf_theta (hot blocks scattered over the span)",
                     "fio's random_distribution [fio]"),
          real_param(
              "zipf_theta", "", 0.99, 0.01, 10.0,
              "(microbenchmark, gather; distribution = zipf) Zipf exponent: the k-th "
              "most popular block is drawn with weight k^-theta",
              "YCSB's zipfian constant 0.99; fio random_distribution=zipf:theta [fio] [ycsb]"),
          real_param("span_gib", "GiB", 0.0, 0.0, 1e6,
                     "bytes of each SSD the I/Os address (0 = the whole namespace)",
                     "fio's size "
                     "[fio]"),
          string_param("gpu", "gpu0", "id of the GPU that issues the I/O",
                       "topology "
                       "[topology-file]"),
          string_list_param("ssds", {"ssd0"}, "ids of the SSDs the I/O is spread over",
                            "topology "
                            "[topology-file]"),
          // kv_cache: the model's KV cache over HBM, host DRAM and NVMe.
          integer_param("layers", "", 32, 1, 1024, "(kv_cache) transformer layers",
                        "Llama 3.1 8B: 32 layers (Meta model card) [llama-3.1-card]"),
          integer_param("kv_heads", "", 8, 1, 1024, "(kv_cache) key-value heads per layer",
                        "Llama 3.1 8B: 8 KV heads (Meta model card) [llama-3.1-card]"),
          integer_param("head_dim", "", 128, 1, 4096, "(kv_cache) dimension of one head",
                        "Llama 3.1 8B: 4096 / 32 heads = 128 [llama-3.1-card]"),
          integer_choice_param("dtype_bytes", "B", 2, {1, 2, 4},
                               "(kv_cache) bytes per KV element (FP8, FP16/BF16, FP32)",
                               "FP16 as in seed 000's KV size table [seed-000]"),
          integer_param("gqa_group", "", 4, 1, 64,
                        "(kv_cache) query heads per KV head (grouped-query attention): the "
                        "cache without GQA would be this many times larger",
                        "Llama 3.1 8B: 32 query heads / 8 KV heads [llama-3.1-card]"),
          integer_param("context_tokens", "", 32768, 1, 1 << 24,
                        "(kv_cache) tokens already in each sequence's context",
                        "seed 000: 32K context for Llama 3.1 8B is ~4 GB of KV [seed-000] "
                        "[llama-3.1-card]"),
          integer_param("batch", "", 1, 1, 4096, "(kv_cache) sequences decoded together",
                        "seed 000: 4 concurrent 128K requests [seed-000]"),
          integer_param("block_tokens", "", 16, 1, 1 << 20,
                        "(kv_cache) tokens per KV block (the unit placed in a tier and moved)",
                        "vLLM's default block size of 16 tokens [vllm]"),
          integer_param("decode_steps", "", 2, 1, 1 << 20,
                        "(kv_cache) tokens generated per sequence in the run",
                        "user [user-choice]"),
          real_param("hbm_kv_gib", "GiB", 1.0, 0.0, 1e5,
                     "(kv_cache) HBM set aside for KV blocks (prefetch staging comes on top)",
                     "seed 000: HBM is shared with the weights; what is left is the hot tier "
                     "[seed-000]"),
          real_param("host_kv_gib", "GiB", 1.0, 0.0, 1e6, "(kv_cache) host DRAM tier capacity",
                     "seed 000: warm tier in host DRAM [seed-000]"),
          real_param("nvme_kv_gib", "GiB", 0.0, 0.0, 1e9,
                     "(kv_cache) NVMe tier capacity over the SSDs (0 = their whole namespaces)",
                     "seed 000: cold tier on local NVMe [seed-000]"),
          enum_param("placement", "layer_order", {"layer_order", "interleave"},
                     "(kv_cache) which blocks go to the faster tiers: layer_order fills HBM, "
                     "then DRAM, then NVMe layer by layer (early layers hot); interleave gives "
                     "every layer the same share of each tier",
                     "seed 000 (tiering policy); estimate: the two ends of layer-wise placement "
                     "[seed-000]"),
          enum_param("eviction", "pin", {"pin", "lru"},
                     "(kv_cache) pin = blocks stay in their tier and lower-tier blocks stream "
                     "through HBM staging every step; lru = HBM caches blocks, a fetched block "
                     "replaces the least recently used one (lower tiers keep every block)",
                     "seed 000 (eviction between tiers); vLLM's LRU block eviction [seed-000] "
                     "[vllm]"),
          integer_param("prefetch_layers", "", 1, 0, 1024,
                        "(kv_cache) layers whose blocks are fetched ahead of the layer being "
                        "computed (0 = fetch a layer's blocks only when it is next)",
                        "seed 001: prefetch and double buffering [seed-001]"),
          real_param("layer_compute_us", "us", 150.0, 0.0, 1e7,
                     "(kv_cache) compute time of one layer per decode step besides attention "
                     "(weight GEMVs)",
                     "estimate: Llama 3.1 8B FP16 streams 16 GB of weights / 32 layers at 3.35 "
                     "TB/s = ~150 us per layer [llama-3.1-card]"),
          real_param("hbm_bandwidth_gbps", "GB/s", 3350.0, 1.0, 1e5,
                     "(kv_cache) HBM bandwidth attention reads the KV blocks at",
                     "NVIDIA H100 SXM datasheet: 3.35 TB/s [nvidia-h100-datasheet]"),
          bool_param("measure_reload", true,
                     "(kv_cache) after decoding, time reloading one sequence's whole context "
                     "from host DRAM and from NVMe",
                     "seed 000: time to first token when a context comes back from a tier "
                     "[seed-000]"),
          // graph: BFS over a CSR graph stored on the SSDs.
          string_param("graph", "rmat",
                       "(graph) rmat = generate an R-MAT (Kronecker) graph with the run's seed; "
                       "otherwise a file: Matrix Market (.mtx) or an edge list (one 'u v' per "
                       "line, 0-based, # or % comments)",
                       "Graph500 (R-MAT generator); SuiteSparse Matrix Market format [graph500] "
                       "[matrix-market]"),
          integer_param("scale", "", 16, 1, 30, "(graph) R-MAT graph of 2^scale vertices",
                        "Graph500 SCALE [graph500]"),
          integer_param("edge_factor", "", 16, 1, 1024, "(graph) R-MAT edges per vertex",
                        "Graph500 edgefactor = 16 [graph500]"),
          real_param("rmat_a", "", 0.57, 0.0, 1.0, "(graph) R-MAT quadrant probability a",
                     "Graph500: A = 0.57 [graph500]"),
          real_param("rmat_b", "", 0.19, 0.0, 1.0, "(graph) R-MAT quadrant probability b",
                     "Graph500: B = 0.19 [graph500]"),
          real_param("rmat_c", "", 0.19, 0.0, 1.0, "(graph) R-MAT quadrant probability c",
                     "Graph500: C = 0.19 (D = 1 - A - B - C = 0.05) [graph500]"),
          bool_param("undirected", true, "(graph) add every edge in both directions",
                     "Graph500 BFS runs on the symmetrized graph [graph500]"),
          integer_param("bfs_source", "", -1, -1, 1e12,
                        "(graph) BFS root (-1 = a vertex with edges, chosen with the seed)",
                        "Graph500: roots drawn among vertices of nonzero degree [graph500]"),
          integer_choice_param("vertex_bytes", "B", 4, {4, 8},
                               "(graph) bytes per neighbour id in the edge array on the SSDs",
                               "GAP Benchmark Suite's CSR graphs store 4 B (int32_t) vertex ids, "
                               "src/benchmark.h [gapbs]; 8 B for graphs past 2^31 vertices"),
          real_param("cache_mib", "MiB", 64.0, 0.0, 1e7,
                     "(graph) GPU software cache for edge-array lines (line = bs)",
                     "BaM (ASPLOS 2023): a GPU-memory cache of SSD lines [bam]"),
          real_param("edge_ns", "ns", 0.05, 0.0, 1e6,
                     "(graph) GPU time per edge scanned (aggregate over the GPU)",
                     "estimate: in-memory GPU BFS reaches ~20 G traversed edges/s on H100-class "
                     "GPUs (Graph500 GPU entries) [graph500]"),
          real_param("kernel_launch_us", "us", 5.0, 0.0, 1e6,
                     "(graph) fixed GPU cost of each BFS level (launch and grid-wide sync)",
                     "estimate: a CUDA kernel launch and synchronization take a few us"),
          // gather: embedding-style lookups of fixed-size rows.
          integer_param("rows", "", 1000000, 1, 1e12, "(gather) rows of the table on the SSDs",
                        "user [user-choice]"),
          integer_param("row_bytes", "B", 256, 1, 1 << 24,
                        "(gather) bytes of one row; rows are packed whole into bs-sized units",
                        "DLRM (Naumov et al., 2019): 64-dimension FP32 embeddings [dlrm]"),
          integer_param("lookups", "", 100000, 1, 1e10, "(gather) rows looked up in the run",
                        "user [user-choice]"),
          integer_param("batch_lookups", "", 4096, 1, 1 << 24,
                        "(gather) lookups issued together; the next batch starts when a batch "
                        "is complete",
                        "DLRM inference batches of thousands of lookups [dlrm]"),
          bool_param("coalesce", true,
                     "(gather) lookups of one batch that fall in the same unit share one I/O",
                     "BaM (ASPLOS 2023): warps coalesce accesses to one cache line [bam]"),
          integer_param("queues", "", 8, 1, 65535, "I/O queue pairs created on each SSD",
                        "seed 003: typical SSDs offer 32-128 queues [seed-003]"),
          integer_param("queue_entries", "", 1024, 2, 65536, "entries of each SQ and CQ",
                        "seed 003: typical depth 256-1024 [seed-003]"),
          enum_param("queue_memory", "gpu", {"gpu", "host"},
                     "(microbenchmark, gpu_initiated) where the SQ and CQ rings live: gpu = GPU "
                     "memory, as BaM places them; host = pinned host memory behind the SSD's "
                     "socket, where the hardware backend's software controller keeps them (the "
                     "GPU's SQE stores and CQ polls then cross PCIe); the GPU-side counters stay "
                     "in GPU memory either way",
                     "BaM, ASPLOS 2023 (queues in GPU memory); sim/hardware/soft_controller.h "
                     "(host placement) [bam]"),
          enum_param("sq_placement", "gpu", {"gpu", "host", "cmb"},
                     "(microbenchmark, gpu_initiated) where the SQ rings live (CQs stay in GPU "
                     "memory): gpu = GPU memory, the SSD fetches entries over PCIe; host = "
                     "pinned host memory, GPU threads write entries over PCIe; cmb = the SSD's "
                     "controller memory buffer (the SSD needs cmb_mib > 0), GPU threads write "
                     "entries over PCIe and the SSD fetches them locally",
                     "BaM (ASPLOS 2023) places queues in GPU memory; NVMe base spec 2.0 section "
                     "8.2 (CMB for SQs) [nvme-base-2.0] [bam]"),
          bool_param("shadow_doorbells", false,
                     "(microbenchmark, gpu_initiated) Doorbell Buffer Config: GPU threads write "
                     "new tails and heads to shadow words in GPU memory and ring the MMIO "
                     "doorbell only when the SSD's EventIdx asks (the SSD profile must support "
                     "it: its shadow_doorbells)",
                     "NVMe base spec 2.0 section 5.8 (Doorbell Buffer Config); Linux "
                     "nvme_dbbuf_update_and_check_event [nvme-base-2.0] [linux]"),
          enum_param("strategy", std::string(algo::kStrategies[0].name),
                     algo::allowed_names("strategy"), algo::strategy_field_doc(),
                     "seeds 001 and 003 (strategies); BaM, ASPLOS 2023 (bam_ticket) [seed-001] "
                     "[seed-003] [bam]"),
          enum_param("queue_mapping", "strategy", algo::allowed_names("queue_mapping"),
                     "which queue a thread's I/O goes to (strategy = the named strategy's choice; "
                     "io_agents always maps through its agents): queue of its SM, of its warp, or "
                     "the next queue of a shared pool for every I/O",
                     "seed 003: GPU-to-queue mapping strategies [seed-003]"),
          enum_param("ssd_mapping", "interleave", algo::allowed_names("ssd_mapping"),
                     "how I/O spreads over several SSDs: interleave = the queue mapping picks "
                     "among every SSD's queues; stripe = the I/O's block picks the SSD (block mod "
                     "SSDs), the mapping picks the queue on it",
                     "seed 001: multi-queue striping [seed-001]"),
          enum_param("cid_scheme", "strategy", algo::allowed_names("cid_scheme"),
                     "how command identifiers are chosen: CID = SQ slot; one atomic counter per "
                     "queue; counter plus an atomic lock bit per CID with retry; warp partition "
                     "(partition << k | warp-local id); thread-local static pools",
                     "seed 001 (CID allocation) and seed 003 (warp_id << k | local) [seed-001] "
                     "[seed-003]"),
          enum_param("submission", "strategy", algo::allowed_names("submission"),
                     "how SQ slots are claimed and doorbells rung on shared queues: every thread "
                     "its own doorbell in ticket order; ready marks and a lock winner ringing one "
                     "doorbell per run; one doorbell per warp; exclusive = the warp owns its queue",
                     "seed 001 (batch submission); BaM (ticket and ready marks) [seed-001] [bam]"),
          enum_param("completion", "strategy", algo::allowed_names("completion"),
                     "how a thread learns its command completed: scan the CQ for its CID; per-CID "
                     "flags filled by whichever waiter drains the CQ; flags filled by dedicated "
                     "polling warps; the queue's owner drains it",
                     "seed 001 (CQ polling: indexed completion tables, dedicated polling warps) "
                     "[seed-001]"),
          integer_param("cid_space", "", 0, 0, 65536,
                        "CIDs a counter scheme cycles through (0 = 65,536 for counter, the queue "
                        "depth for counter_lock); other schemes derive theirs",
                        "NVMe base spec 2.0: CIDs are 16 bits, unique per SQ while outstanding "
                        "[nvme-base-2.0]"),
          integer_param("agent_warps", "", 8, 1, 4096,
                        "I/O-agent warps (io_agents); each owns queues (queue i of every SSD goes "
                        "to agent i mod agent_warps), so at most one per queue",
                        "seed 003: 32-128 agent threads handle queue operations [seed-003]"),
          integer_param("agent_ring_entries", "", 1024, 2, 1 << 20,
                        "request ring slots per I/O agent (io_agents)",
                        "estimate: a few times the requests one agent has in flight"),
          integer_param("poller_warps", "", 4, 1, 4096,
                        "dedicated polling warps (completion = polling_warps); each drains the "
                        "queues q with q mod poller_warps equal to its index",
                        "seed 001: dedicated polling warps [seed-001]"),
          integer_param("batch_size", "", 32, 1, 65535,
                        "commands per SQ doorbell: the most a warp_batch or exclusive warp "
                        "publishes with one doorbell (capped at 32: a warp submits one command "
                        "per lane per call, so its batch never exceeds its 32 lanes), and what "
                        "an I/O agent collects before it rings without waiting for "
                        "batch_timeout_ns (no cap)",
                        "seed 001: batch submission, 32+ commands per doorbell [seed-001]"),
          real_param("batch_timeout_ns", "ns", 0.0, 0.0, 1e9,
                     "longest an I/O agent holds a command before ringing its doorbell (0 = ring "
                     "at the end of every pass over the request ring)",
                     "seed 001: doorbell every N commands or after a timeout [seed-001]"),
          integer_param("cq_doorbell_batch", "", 1, 1, 65535,
                        "CQ entries consumed between CQ head doorbells (capped at queue_entries "
                        "- 1, so that a full CQ is always released)",
                        "seed 001: batch completion notification [seed-001]"),
          real_param("poll_backoff_ns", "ns", 0.0, 0.0, 1e6,
                     "__nanosleep between two polls of a waiting warp",
                     "CUDA C Programming Guide: __nanosleep for polling backoff [cuda-guide]"),
          integer_param("threads_per_block", "", 256, 32, 1024,
                        "threads per CUDA block: blocks go to SMs round robin, so this sets which "
                        "warps share an SM (per_sm mapping, warp scheduler contention)",
                        "CUDA C Programming Guide: at most 1024 threads per block; 256 is a common "
                        "launch shape [cuda-guide]"),
      }};
  return spec;
}

}  // namespace gpunvme
