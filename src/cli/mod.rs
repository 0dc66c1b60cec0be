//! The command line: subcommands and flags (clap derive). Flags reuse the words of
//! hyperfine, trtexec and perf_analyzer where they exist.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::backend::{BackendSpec, GraphOpt};
use crate::measure::bench;
use crate::model::InputShape;
use crate::report::schema::qps::{Arrival, LoadMode};

pub mod flags;
pub mod parse;
pub mod settings;

/// Evaluate, grade and certify AI hardware acceleration for electric-power AI
/// (T/CES draft "Technical specification for heterogeneous hardware acceleration of
/// electric-power AI algorithms").
#[derive(Debug, Parser)]
#[command(name = "acceval", version = crate::util::build_info::VERSION, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What a model is: inputs/outputs, operators, parameters (Table 1), MACs and FLOPs
    /// (Table 2) at concrete input shapes.
    Inspect(InspectArgs),
    /// Identify the hardware (§6.2 c): CPU, memory, OS, container, NVIDIA GPUs (NVML),
    /// Ascend NPUs (DCMI / npu-smi), ONNX Runtime and its providers, and every backend.
    Devices(DevicesArgs),
    /// Run a model once on a backend (then --runs steady runs): §5.3 timings, outputs,
    /// operator placement.
    Run(RunArgs),
    /// Run an ONNX test-data suite (e.g. ONNX's backend node tests) through a backend and
    /// report, per operator, how many cases load, run and match.
    Conformance(ConformanceArgs),
    /// The model zoo: the power scenarios' standard models, built deterministically.
    Zoo(ZooArgs),
    /// Input sets: deterministic synthetic scenes (JPEG/PNG) and load series (CSV).
    Inputs(InputsArgs),
    /// Compute the FP32 model's reference outputs on the CPU for every input of its input
    /// set (ONNX test-data layout + manifest), cross-checked on the second CPU engine.
    Reference(ReferenceArgs),
    /// Grade a backend's outputs against the FP32 CPU reference (§6.2 i, Table 3): MSE,
    /// max abs error, relative L2, cosine per output and per input; decision agreement.
    Accuracy(AccuracyArgs),
    /// Measure latency (§7.2.3), FPS (§7.2.4), utilization, power and energy (§7.2.6,
    /// §7.1.4–7.1.7) under a run policy, with validity rules and the MindIE statistics.
    Bench(BenchArgs),
    /// Certify against a scenario profile: devices, Tables 1–2, accuracy (Table 3 vs 4),
    /// speed with telemetry (Table 5), the clause table, and a compliance report.
    Grade(GradeArgs),
    /// Serve a model over the KServe v2 / Triton HTTP inference protocol (JSON and binary
    /// tensors), with Prometheus metrics, limits and optional dynamic batching.
    Serve(ServeArgs),
    /// Find the highest QPS a v2 inference server sustains within a latency bound (§7.2.5):
    /// open-loop arrivals (Poisson or uniform) searched geometrically then by bisection, or
    /// the draft's closed-loop concurrency sweep.
    Qps(QpsArgs),
    /// MindIE Benchmark's client mode for LLM services: time to first token, decode times,
    /// TPOT, throughput and token speed, with MindIE's statistics and CSV files.
    Llm(LlmArgs),
    /// Training evaluation (§7.1, optional in the draft): single-step and total time,
    /// utilization per epoch, throughput, power and energy efficiency, for a built-in
    /// workload on candle or a lab's own training script (`--exec -- CMD ARGS...`).
    Train(TrainArgs),
    /// Check a report folder: exactly its files against manifest.json, report.json against
    /// the schema and its verdict against its clauses, and (with --pubkey) the lab's signature.
    Verify {
        /// The report folder (reports/<time>-<profile>-<backend>).
        dir: PathBuf,
        /// The lab's public key (`acceval keygen` writes NAME.pub): the report must be signed
        /// with its private key.
        #[arg(long, value_name = "FILE")]
        pubkey: Option<PathBuf>,
    },
    /// Sign an existing report folder's manifest.json with a lab's ed25519 private key.
    Sign {
        dir: PathBuf,
        /// The private key (`acceval keygen` writes NAME.key).
        #[arg(long, value_name = "FILE")]
        key: PathBuf,
    },
    /// Make an ed25519 key pair for signing reports: NAME.key (private) and NAME.pub.
    Keygen {
        /// The key's path without extension.
        #[arg(long, value_name = "NAME")]
        out: PathBuf,
    },
    /// Render a report folder's views again from its report.json.
    Report {
        dir: PathBuf,
        /// md, html, csv (the clause table), or samples (every latency statistic recomputed
        /// from samples.csv beside the summary; exit 1 when one differs).
        #[arg(long, default_value = "md")]
        format: String,
    },
    /// Write (or check) the JSON Schemas of every result acceval writes (schemas/).
    #[command(hide = true)]
    Schemas {
        /// The folder to write them into.
        #[arg(long, value_name = "DIR", conflicts_with = "check")]
        write: Option<PathBuf>,
        /// Fail when a schema in this folder differs from the types.
        #[arg(long, value_name = "DIR")]
        check: Option<PathBuf>,
    },
    /// Scenario profiles.
    Profile {
        #[command(subcommand)]
        command: ProfileCommand,
    },
    /// The cluster figures of a `bench --cluster DIR` run from its ranks' files (§7.2.4 b
    /// FPS, per-node FPS, imbalance, energy), of `train --cluster DIR` (§7.1.5 b throughput,
    /// the all-reduce's share) or of `accuracy --cluster DIR` (Table 3 metrics pooled over
    /// every rank's inputs): every rank must have reported, or the run is INVALID (exit 1)
    /// and the missing or failed rank is named. Writes DIR/cluster.json and DIR/cluster.md.
    Merge {
        dir: PathBuf,
        /// Training runs: one rank's `train --export-json` report on the same workload, for
        /// the scaling efficiency.
        #[arg(long, value_name = "REPORT")]
        baseline: Option<PathBuf>,
        /// Print the result as JSON on stdout (instead of the summary).
        #[arg(long)]
        json: bool,
    },
    /// Cluster runs under a launcher (Slurm, Open MPI, MPICH, torchrun, Kubernetes).
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Which rank this process is, as acceval reads it from the launcher's environment
    /// (run it under the launcher: `mpirun -np 3 acceval cluster rank`).
    Rank {
        /// This process's rank, by hand (with --world-size; for a launcher acceval does not
        /// know).
        #[arg(long)]
        rank: Option<usize>,
        /// The number of ranks, by hand (alone: a Kubernetes Indexed Job's completions).
        #[arg(long)]
        world_size: Option<usize>,
        /// One JSON line instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Validate a profile file (errors name the key and line).
    Check { file: PathBuf },
    /// List the shipped profiles.
    List,
}

#[derive(Debug, Args)]
pub struct GradeArgs {
    /// A shipped profile's name (line-inspection-realtime, line-inspection-offline,
    /// substation-monitoring, bigdata-forecast) or a profile file.
    #[arg(long, required_unless_present = "resume")]
    pub profile: Option<String>,
    /// Continue the INCOMPLETE grade in DIR from its last finished stage, with the settings
    /// of its command line; refused unless DIR passes `verify` and the binary, profile,
    /// model and devices are the ones it was measured with. The report records the resume.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Override the profile's minimum runs (the report marks the policy as overridden).
    #[arg(long, value_parser = parse::positive_count)]
    pub runs: Option<usize>,
    /// Override the profile's minimum duration, s (marked as overridden).
    #[arg(long, value_parser = parse::seconds)]
    pub duration: Option<f64>,
    /// A SPEC PTDaemon serving a power analyser (wall power).
    #[arg(long, value_name = "HOST:PORT")]
    pub ptd: Option<String>,
    /// The LLM service for the profile's [llm] stage (overrides its url).
    #[arg(long, value_name = "URL")]
    pub llm_url: Option<String>,
    /// The cluster run for the profile's [cluster] stage: the DIR of `acceval bench --cluster
    /// DIR` run under mpirun, srun or a Kubernetes Indexed Job (docs/cluster.md); grade
    /// merges it, judges it and copies its rank files into the report.
    #[arg(long, value_name = "DIR")]
    pub cluster_run: Option<PathBuf>,
    /// Sign manifest.json with this ed25519 private key (`acceval keygen`); the signature
    /// goes beside it as manifest.json.sig.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// `--out DIR` is the report folder [default: reports/<UTC time>-<profile>-<backend>];
    /// `--json` prints report.json instead of the clause table; `--export-json` and
    /// `--export-csv` (the clause table) also write those files.
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The model: a zoo name (its task pipeline and input set are used) or an ONNX file.
    #[arg(long)]
    pub model: PathBuf,
    /// Inputs: a folder of images or a CSV series (the task pipeline runs on each), an ONNX
    /// test_data_set folder, a folder of NAME.npy, or an .npz (model only). Default: the zoo
    /// model's input set; seeded inputs for other models.
    #[arg(long = "inputs", value_name = "PATH")]
    pub inputs: Option<PathBuf>,
    /// The task of a model that is not in the zoo (to run its pipeline).
    #[arg(long, value_enum)]
    pub task: Option<crate::task::Task>,
    /// Time the backend's run alone on pre-processed inputs (no decode, pre- or
    /// post-processing).
    #[arg(long)]
    pub model_only: bool,
    /// Shape for a generated input with dynamic dims, NAME:DxDxD (repeatable).
    #[arg(long = "shape", value_name = "NAME:SHAPE")]
    pub shapes: Vec<InputShape>,
    /// Seed for generated inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Warm-up runs, untimed (at least this many...); `--warmup` is hyperfine's spelling of
    /// the same count.
    #[arg(long = "warmup-runs", visible_alias = "warmup", default_value_t = bench::DEFAULT_WARMUP, value_name = "N", value_parser = parse::count)]
    pub warmup: usize,
    /// ...and for at least this many seconds (`--warmup-time` is the same).
    #[arg(long = "warmup-s", visible_alias = "warmup-time", default_value_t = 0.0, value_name = "S", value_parser = parse::seconds)]
    pub warmup_time: f64,
    /// Timed samples: at least this many...
    #[arg(long, default_value_t = bench::DEFAULT_RUNS, value_parser = parse::positive_count)]
    pub runs: usize,
    /// ...and for at least this many seconds (both minimums apply).
    #[arg(long, default_value_t = bench::DEFAULT_DURATION_S, value_name = "S", value_parser = parse::seconds)]
    pub duration: f64,
    /// Idle gap between samples, ms (25 fps camera: --interval-ms 40 minus the latency).
    #[arg(long, default_value_t = 0.0, value_name = "MS", value_parser = parse::millis)]
    pub interval_ms: f64,
    /// The percentile the run is judged on: the sample count must support it.
    #[arg(long, default_value_t = bench::DEFAULT_PERCENTILE, value_name = "P", value_parser = parse::percentile)]
    pub percentile: f64,
    /// Largest coefficient of variation (stddev/mean) of the end-to-end latency.
    #[arg(long, default_value_t = bench::DEFAULT_MAX_CV, value_parser = parse::ratio)]
    pub max_cv: f64,
    /// Largest spread of the medians of the last 3 of 5 windows (0.10 = 10 %).
    #[arg(long, default_value_t = bench::DEFAULT_STABILITY, value_parser = parse::ratio)]
    pub stability: f64,
    /// Exit 0 even when the run is INVALID.
    #[arg(long)]
    pub allow_invalid: bool,
    /// Batch sizes to sweep for offline throughput, e.g. 1,2,4,8 (models with a dynamic
    /// batch dimension; model only).
    #[arg(long, value_delimiter = ',', value_name = "B,B,...", value_parser = parse::positive_count)]
    pub batch: Vec<usize>,
    /// Peak power (§7.1.6 b): raise the batch 1, 2, 4, ... until throughput stops growing
    /// (< 5 %) and report the largest power sample (model only, dynamic batch).
    #[arg(long)]
    pub peak_power: bool,
    /// After the one-at-a-time run, the module's throughput pipelined: K threads decode and
    /// pre-process the next inputs (a bounded queue) while one runs the model and
    /// post-processes; FPS = N / T, T from the first input taken to the last output written.
    /// K is at most 256.
    #[arg(long, value_name = "K", value_parser = parse::pipeline_workers)]
    pub pipelined: Option<usize>,
    /// With --pipelined: M model instances take the prepared inputs, each its own session
    /// with --threads intra-op threads (Triton's `instance_group` count), so M forwards may
    /// run at once. The warm session of the one-at-a-time run is the first. At most 64; the
    /// run stops before opening the rest when they would not fit in host memory (instance
    /// 2's measured growth times M - 2 over 80 % of what is available).
    #[arg(long, value_name = "M", value_parser = parse::instances, requires = "pipelined")]
    pub instances: Option<usize>,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
    #[command(flatten)]
    pub detect: DetectArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Write every sample (start, end-to-end and stage times) as CSV.
    #[arg(long, value_name = "FILE")]
    pub export_samples: Option<PathBuf>,
    /// Write the telemetry timeline as CSV.
    #[arg(long, value_name = "FILE")]
    pub export_telemetry: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// One rank of a cluster run (issue 25; docs/cluster.md).
#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Run as one rank of a cluster run started by a launcher (mpirun, srun, torchrun, a
    /// Kubernetes Indexed Job), DIR a folder every rank can write. bench: the --runs samples
    /// are split over the ranks, which meet at barriers around their timed windows and each
    /// write DIR/rank-<r>.json for `acceval merge DIR`. train: data-parallel training, each
    /// rank its share of every global batch, the gradients summed over the ranks each step
    /// (--all-reduce), each rank writing DIR/train-rank-<r>.json.
    #[arg(long, value_name = "DIR")]
    pub cluster: Option<PathBuf>,
    #[command(flatten)]
    pub by_hand: RankArgs,
    /// The longest a rank waits for the others: to join, and at each barrier, s.
    #[arg(long, default_value_t = 300.0, value_name = "S", value_parser = parse::positive_seconds, requires = "cluster")]
    pub cluster_timeout: f64,
}

#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Data-parallel training (with --cluster): how the ranks sum their gradients each step.
    #[arg(long, value_enum, default_value = "ring", requires = "cluster")]
    pub all_reduce: crate::cluster::collective::Mode,
    /// A built-in workload: lstm-load-forecast, mobilenetv2-meter, yolov8n-line.
    #[arg(long, required_unless_present = "exec", conflicts_with = "exec")]
    pub workload: Option<String>,
    /// Run the lab's own training (the command after `--`) as the child and read its
    /// MLPerf `:::MLLOG` events from its stdout.
    #[arg(long, requires = "command")]
    pub exec: bool,
    /// The lab's training command line, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
    /// Epochs to train.
    #[arg(long, default_value_t = 3, value_parser = parse::positive_count)]
    pub epochs: usize,
    /// Batch size [default: the workload's].
    #[arg(long, value_parser = parse::positive_count)]
    pub batch: Option<usize>,
    /// Learning rate (AdamW) [default: the workload's].
    #[arg(long, value_parser = parse::learning_rate)]
    pub lr: Option<f64>,
    /// Seed of the data order (the weights start from the zoo's seeded values).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// fp32, fp16 or fp64 (§6 e); one the backend cannot train is an error that says why.
    #[arg(long, default_value = "fp32", value_parser = ["fp32", "fp16", "fp64"])]
    pub precision: String,
    /// Stop at a target: METRIC<=X or METRIC>=X (mae_mw, accuracy, map50, loss; with
    /// --exec, eval_accuracy).
    #[arg(long, value_parser = parse::target)]
    pub target: Option<crate::report::schema::train::Target>,
    /// Runs, reported with MLPerf's olympic mean (drop the fastest and the slowest).
    #[arg(long, default_value_t = 1, value_parser = parse::positive_count)]
    pub repeat: usize,
    /// Where it trains, in the backend vocabulary: candle (candle on the CPU, also
    /// `candle:cpu`), candle:cuda@N (needs the candle-cuda feature), or tch / tch:cuda@N
    /// (the same graph, data and loop on libtorch; needs the tch feature).
    #[arg(long, default_value = "candle", value_name = "BACKEND")]
    pub backend: String,
    /// Refused: devices are `--backend candle:cuda@N`, as in every other command.
    #[arg(long = "device", hide = true, value_name = "X")]
    pub old_device: Option<String>,
    /// CPU threads for candle's kernels (sets RAYON_NUM_THREADS) [default: one per core].
    /// On a loaded machine fewer can be faster (LSTM steps: 1 thread was 2× faster here).
    #[arg(long, value_parser = parse::positive_count)]
    pub threads: Option<usize>,
    /// Steps left out of the step statistics (kept in the total).
    #[arg(long, default_value_t = 1, value_parser = parse::count)]
    pub warmup_steps: usize,
    /// Evaluate on the held-out set after every Nth epoch (and always after the last); the
    /// epochs between have no evaluation on the clock, and --target is checked when one runs.
    #[arg(long, default_value_t = 1, value_parser = parse::positive_count)]
    pub eval_every: usize,
    /// Train on at most this many samples per epoch (a fixed seeded subset).
    #[arg(long, value_parser = parse::positive_count)]
    pub samples: Option<usize>,
    /// Evaluate on at most this many held-out samples.
    #[arg(long, value_parser = parse::positive_count)]
    pub eval_samples: Option<usize>,
    /// The image side the image workloads train at [default: the workload's].
    #[arg(long, value_parser = parse::positive_count)]
    pub image_size: Option<usize>,
    /// Save the trained weights (safetensors, by initializer name; the zoo reads
    /// models/weights/<model>.safetensors).
    #[arg(long, value_name = "FILE")]
    pub save_weights: Option<PathBuf>,
    /// Write the trained model as ONNX (the zoo's graph with the trained weights).
    #[arg(long, value_name = "FILE")]
    pub export_onnx: Option<PathBuf>,
    /// Peak power (§7.1.6 b): after the training, steps at batch b, 2b, 4b, ... until the
    /// throughput grows < 5 % (or a step fails, or 16× b), the largest power sample.
    #[arg(long)]
    pub peak_power: bool,
    /// Write acceval's own :::MLLOG events here [default: beside --export-json as .mllog,
    /// or train.mllog in --out].
    #[arg(long, value_name = "FILE")]
    pub mllog: Option<PathBuf>,
    /// MLPerf's submission_org in the mllog (who submits; never guessed: without it the
    /// mllog lacks the field and MLPerf's compliance checker refuses it).
    #[arg(long, value_name = "ORG")]
    pub submission_org: Option<String>,
    /// MLPerf's submission_platform in the mllog (the system's name).
    #[arg(long, value_name = "NAME")]
    pub submission_platform: Option<String>,
    /// MLPerf's submission_division in the mllog.
    #[arg(long, value_enum)]
    pub submission_division: Option<crate::report::schema::train::Division>,
    #[command(flatten)]
    pub telemetry: TelemetryArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Telemetry while measuring.
#[derive(Debug, Clone, Args)]
pub struct TelemetryArgs {
    /// Telemetry interval, ms (0 turns telemetry off).
    #[arg(long, default_value_t = bench::DEFAULT_SAMPLE_MS)]
    pub sample_ms: u64,
    /// A SPEC PTDaemon serving a power analyser (wall power).
    #[arg(long, value_name = "HOST:PORT")]
    pub ptd: Option<String>,
}

/// Where a command's result goes: the same flags on every command that has a result.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// Print the result as JSON on stdout (instead of the tables).
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON result to this file (atomically).
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write the result's main table as CSV.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// A folder for the JSON, every table as CSV, and charts.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// The FP32 model: a zoo name (its input set is used) or an ONNX file.
    #[arg(long)]
    pub model: PathBuf,
    /// The CPU engine that computes the reference: cpu (tract) or ort:cpu; the other one
    /// cross-checks it.
    #[arg(long, default_value = "cpu", value_name = "BACKEND")]
    pub backend: BackendSpec,
    /// Threads: tract's kernel pool (default: every core) or ONNX Runtime's intra-op threads.
    #[arg(long)]
    pub threads: Option<usize>,
    /// The inputs: a folder of images or a CSV series (pre-processed by the task pipeline),
    /// an ONNX test_data_set folder (or a folder of them), or an .npz. Default: the zoo
    /// model's input set; for other models, --count seeded inputs.
    #[arg(long = "inputs", value_name = "PATH")]
    pub inputs: Option<PathBuf>,
    /// The task of a model that is not in the zoo (to pre-process images or a series).
    #[arg(long, value_enum)]
    pub task: Option<crate::task::Task>,
    /// Seeded inputs to generate when there is no input set (uniform [0, 1)).
    #[arg(long, default_value_t = 4)]
    pub count: usize,
    /// Seed of generated inputs (input set k, model input j uses seed + 1000·k + j).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write it [default: reference_outputs/<model>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Do not cross-check on the second CPU engine (recorded in the manifest).
    #[arg(long)]
    pub no_cross_check: bool,
    /// The engine of the cross-check: auto = the other CPU engine (ort:cpu for cpu, cpu
    /// for ort:cpu), or candle for a zoo graph where ONNX Runtime is not installed; candle =
    /// acceval's interpreter of the zoo graph on candle's kernels, the one that trains it.
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        conflicts_with = "no_cross_check"
    )]
    pub cross_check_engine: CrossCheckEngine,
    /// Print the manifest as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AccuracyArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The model under test: a zoo name with its variant (resnet50-substation@int8,
    /// yolov8n-line-fp16) or an ONNX file (then --reference is needed).
    #[arg(long)]
    pub model: PathBuf,
    /// The FP32 reference [default for zoo models: reference_outputs/<model>, computed on
    /// the first use].
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,
    /// The Table 3 level required (C1..C4, C4 strictest): the verdict PASS/FAIL, exit 1 on FAIL.
    #[arg(long, value_name = "LEVEL")]
    pub require: Option<crate::standard::Level>,
    /// Grade the zoo model's FP32, FP16 and INT8 variants and print one table.
    #[arg(long)]
    pub all_precisions: bool,
    /// Use only the first N inputs of the reference (the report says so).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// The task of a model that is not in the zoo (for decision agreement).
    #[arg(long, value_enum)]
    pub task: Option<crate::task::Task>,
    /// Check a conversion (§5.3 a): run --model (the source, e.g. a TorchScript .pt on
    /// --backend tch) and CONVERTED (e.g. its ONNX export) on the same seeded inputs, the
    /// source's outputs being the reference, and grade CONVERTED on every --against-backend
    /// with Table 3 (and top-1 agreement with --task classification).
    #[arg(long, value_name = "CONVERTED")]
    pub against: Option<PathBuf>,
    /// An engine for the converted model (repeatable) [default: cpu, and ort:cpu where ONNX
    /// Runtime is found].
    #[arg(long = "against-backend", value_name = "BACKEND", requires = "against")]
    pub against_backends: Vec<BackendSpec>,
    /// Seeded input sets for --against.
    #[arg(long, default_value_t = 4, value_parser = parse::positive_count, requires = "against")]
    pub sets: usize,
    /// NAME:SHAPE for a dynamic input of the converted model (--against).
    #[arg(long = "shape", value_name = "NAME:SHAPE", requires = "against")]
    pub shapes: Vec<InputShape>,
    #[command(flatten)]
    pub detect: DetectArgs,
    /// accuracy --cluster DIR: each rank grades its share of the N inputs (an even split,
    /// the remainder to the first ranks) and writes DIR/accuracy-rank-<r>.json with each
    /// output's running sums; `acceval merge DIR` pools them into the metrics over all N.
    /// The ranks do not meet (nothing is timed across them).
    #[command(flatten)]
    pub cluster: AccuracyClusterArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The second engine of a reference's cross-check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CrossCheckEngine {
    Auto,
    Candle,
}

/// One rank of `accuracy --cluster` (no meeting, so no timeout).
#[derive(Debug, Clone, Default, Args)]
pub struct AccuracyClusterArgs {
    /// Grade this rank's share of the inputs and write DIR/accuracy-rank-<r>.json, DIR a
    /// folder every rank can write; `acceval merge DIR` pools the ranks' files.
    #[arg(long, value_name = "DIR")]
    pub cluster: Option<PathBuf>,
    #[command(flatten)]
    pub by_hand: RankArgs,
}

/// A rank given by hand, for a launcher acceval does not read (with `--cluster`).
#[derive(Debug, Clone, Default, Args)]
pub struct RankArgs {
    /// This process's rank, by hand (with --world-size; for a launcher acceval does not
    /// read).
    #[arg(long, requires = "cluster")]
    pub rank: Option<usize>,
    /// The number of ranks, by hand (alone: a Kubernetes Indexed Job's completions).
    #[arg(long, requires = "cluster")]
    pub world_size: Option<usize>,
}

impl RankArgs {
    /// This process's rank: from the launcher's environment, or as given.
    pub fn find(&self) -> anyhow::Result<crate::cluster::Rank> {
        crate::cluster::rank::from_env(crate::cluster::Given {
            rank: self.rank,
            world_size: self.world_size,
        })
        .map_err(|e| {
            anyhow::anyhow!(
                "{e}; give --rank and --world-size by hand for a launcher acceval does not read"
            )
        })
    }
}

#[derive(Debug, Args)]
pub struct InputsArgs {
    #[command(subcommand)]
    pub command: InputsCommand,
}

#[derive(Debug, Subcommand)]
pub enum InputsCommand {
    /// List the input sets and the models they are for.
    List,
    /// Generate sets into inputs/ (all when no SET is given) and check each file's SHA-256
    /// against the committed inputs/SET/manifest.toml.
    Build {
        sets: Vec<String>,
        /// Rewrite the manifests instead of checking against them.
        #[arg(long)]
        update_manifest: bool,
    },
}

#[derive(Debug, Args)]
pub struct ZooArgs {
    #[command(subcommand)]
    pub command: ZooCommand,
}

#[derive(Debug, Subcommand)]
pub enum ZooCommand {
    /// List the zoo's models (from models/zoo.toml) and whether each is built.
    List {
        /// Print the manifest as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build models into models/ (all when no NAME is given), checking each file's SHA-256
    /// against models/zoo.toml.
    Build {
        /// Model names, e.g. resnet50-substation, yolov8n-line-fp16.
        names: Vec<String>,
        /// Rebuild even when a file with the right hash exists.
        #[arg(long)]
        force: bool,
        /// Rewrite models/zoo.toml from the built models (for changes to the generator).
        #[arg(long)]
        update_manifest: bool,
    },
}

/// Detection post-processing (ultralytics' prediction defaults).
#[derive(Debug, Clone, Copy, Args)]
pub struct DetectArgs {
    /// Score threshold of detection post-processing.
    #[arg(long, default_value_t = 0.25)]
    pub conf: f32,
    /// IoU threshold of non-maximum suppression.
    #[arg(long, default_value_t = 0.45)]
    pub iou: f64,
}

impl DetectArgs {
    pub fn params(&self) -> crate::task::detect::DetectParams {
        crate::task::detect::DetectParams {
            conf: self.conf,
            iou: self.iou,
            ..Default::default()
        }
    }
}

/// Where and how a model runs.
#[derive(Debug, Args)]
pub struct BackendArgs {
    /// NAME[:PROVIDER][@DEVICE]: cpu (tract, the default), ort:cpu, ort:cuda@0,
    /// ort:tensorrt, ort:cann, ort:openvino, ..., cuda (tract's CUDA runtime). See `acceval devices`.
    #[arg(long, default_value = "cpu", value_name = "BACKEND")]
    pub backend: BackendSpec,
    /// Threads: tract's kernel pool (default: every core) or ONNX Runtime's intra-op threads.
    #[arg(long)]
    pub threads: Option<usize>,
    /// ONNX Runtime graph optimisation level [default: all].
    #[arg(long, value_enum)]
    pub graph_opt: Option<GraphOpt>,
    /// Execution-provider option KEY=VALUE (repeatable), passed to the ONNX Runtime provider.
    #[arg(long, value_name = "KEY=VALUE")]
    pub ep_option: Vec<String>,
    /// The longest loading the model may take, s; past it the run ends with exit 2 naming
    /// the stage [default: 15 s + 1 s per 5 MB of model; tract's, ONNX Runtime's,
    /// libtorch's and ACL's loads run on a thread acceval stops waiting for].
    #[arg(long, value_name = "S", value_parser = parse::positive_seconds)]
    pub load_timeout: Option<f64>,
    /// The longest one inference may take, s; past it ONNX Runtime is told to stop the run
    /// (exit 2 naming the budget), and an engine that cannot be interrupted (tract,
    /// libtorch) ends the process with exit 2 [default: 10 s + 1 s per 10^9 operations of one
    /// pass through the model, a loop's body once; a device provider's first run gets 600 s
    /// more].
    #[arg(long, value_name = "S", value_parser = parse::positive_seconds)]
    pub run_timeout: Option<f64>,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The ONNX model.
    #[arg(long)]
    pub model: PathBuf,
    /// An input: NAME=FILE.npy, NAME=FILE.npz, NAME=FILE.pb (ONNX TensorProto), or FILE.npz holding arrays named like the
    /// inputs (repeatable). Inputs not given are generated from --seed.
    #[arg(long = "input", value_name = "NAME=FILE")]
    pub inputs: Vec<String>,
    /// Inputs from a folder or archive: a folder of images (task pipeline), an ONNX
    /// test_data_set folder (input_K.pb), a folder of NAME.npy files, or an .npz.
    #[arg(long = "inputs", value_name = "PATH")]
    pub inputs_path: Option<PathBuf>,
    /// Shape for a generated input with dynamic dims, NAME:DxDxD (repeatable).
    #[arg(long = "shape", value_name = "NAME:SHAPE")]
    pub shapes: Vec<InputShape>,
    /// Seed for generated inputs (input k uses seed + k).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the outputs of the first inference to this .npz file (with --image/--series:
    /// the task results as JSON).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Steady runs after the first (cold) inference.
    #[arg(long, default_value_t = crate::measure::run::DEFAULT_RUNS, value_parser = parse::count)]
    pub runs: usize,
    /// Record and show where each node ran (ONNX Runtime profiling; adds overhead).
    #[arg(long)]
    pub placement: bool,
    #[command(flatten)]
    pub output_args: OutputArgs,
    /// Run the task pipeline (decode, pre-process, model, post-process) on this image, or
    /// every JPEG/PNG in this folder (repeatable): top-k classes or detections, with
    /// per-stage times.
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<PathBuf>,
    /// Run the forecasting pipeline on this load series (CSV).
    #[arg(long, value_name = "FILE.csv")]
    pub series: Option<PathBuf>,
    /// The task of a model that is not in the zoo (zoo models know theirs).
    #[arg(long, value_enum)]
    pub task: Option<crate::task::Task>,
    /// Classes to show (classification).
    #[arg(long, default_value_t = 5)]
    pub top_k: usize,
    #[command(flatten)]
    pub detect: DetectArgs,
}

#[derive(Debug, Args)]
pub struct ConformanceArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The suite: a folder of test folders, each with model.onnx and
    /// test_data_set_N/{input,output}_K.pb (e.g. onnx/backend/test/data/node from the
    /// onnx 1.22.0 wheel; scripts/fetch-onnx-node-tests.sh fetches it).
    #[arg(long, value_name = "DIR", env = "ACCEVAL_CONFORMANCE_SUITE")]
    pub suite: PathBuf,
    /// Relative tolerance.
    #[arg(long, default_value_t = 1e-3)]
    pub rtol: f64,
    /// Absolute tolerance.
    #[arg(long, default_value_t = 1e-7)]
    pub atol: f64,
    /// Which cases: fp32 = every input and output is an FP32 tensor; all = every case.
    #[arg(long, value_enum, default_value = "fp32")]
    pub types: crate::conformance::SuiteTypes,
    /// Only cases whose folder name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Seconds one case may take before it counts as failed.
    #[arg(long, default_value_t = 60)]
    pub case_timeout: u64,
    /// Exit 1 (not compliant) when fewer cases pass.
    #[arg(long, value_name = "N")]
    pub min_passed: Option<usize>,
    /// List every failing case in the table view.
    #[arg(long)]
    pub failures: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The ONNX model file (external data files are read from beside it).
    pub model: PathBuf,
    /// Shape of an input with dynamic or symbolic dims, NAME:DxDxD (repeatable),
    /// e.g. --input images:1x3x640x640.
    #[arg(long = "input", value_name = "NAME:SHAPE")]
    pub inputs: Vec<InputShape>,
    /// Print the whole analysis as JSON (stable field names, see the README) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Show the N nodes with the most MACs, with their shapes.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "15")]
    pub per_op: Option<usize>,
    /// Also list every parameter tensor and shape tensor.
    #[arg(long)]
    pub tensors: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
    /// The model: a zoo name or an ONNX file.
    #[arg(long)]
    pub model: PathBuf,
    /// The name clients use in /v2/models/NAME [default: the zoo name or the file stem].
    #[arg(long)]
    pub name: Option<String>,
    /// Address to bind. Loopback by default; beyond it (0.0.0.0, ::, a routable address)
    /// a warning names the interfaces reached: use --api-key and --tls-cert/--tls-key there.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port (0 picks a free one; the address is printed on stdout).
    #[arg(long, default_value_t = crate::server::DEFAULT_PORT)]
    pub port: u16,
    /// Shape of an input with dynamic dims, NAME:DxDxD (repeatable) [default: 1 for each].
    #[arg(long = "shape", value_name = "NAME:SHAPE")]
    pub shapes: Vec<InputShape>,
    /// Model instances, each a session on its own thread.
    #[arg(long, default_value_t = 1, value_parser = parse::positive_count)]
    pub instances: usize,
    /// Dynamic batching: join up to this many queued requests into one run (models whose
    /// first dimension is dynamic; partial batches are padded to it).
    #[arg(long, default_value_t = 1, value_parser = parse::positive_count)]
    pub max_batch: usize,
    /// How long the first request of a batch waits for others, µs.
    #[arg(long, default_value_t = crate::server::DEFAULT_BATCH_TIMEOUT_US)]
    pub batch_timeout_us: u64,
    /// Requests admitted at once (queued or running); more get 503.
    #[arg(long, default_value_t = crate::server::DEFAULT_MAX_INFLIGHT, value_parser = parse::positive_count)]
    pub max_inflight: usize,
    /// Largest request body, MB (MB = 1e6 bytes); larger ones get 413 (a declared
    /// Content-Length at once, before the body is read).
    #[arg(long, default_value_t = crate::server::DEFAULT_MAX_BODY_MB, value_parser = parse::megabytes)]
    pub max_body_mb: f64,
    /// Memory the requests in flight may hold together, MB (each is charged twice its body:
    /// the body and its decoded tensors); a request that would pass it gets 503
    /// [default: 2000 or half the machine's memory, the smaller].
    #[arg(long, value_parser = parse::megabytes)]
    pub max_memory_mb: Option<f64>,
    /// Seconds a request's head (request line and headers) may take to arrive; a slower
    /// connection is closed.
    #[arg(long, value_name = "S", default_value_t = crate::server::DEFAULT_HEADER_TIMEOUT_S, value_parser = parse::positive_seconds)]
    pub header_timeout: f64,
    /// Seconds a request's whole body may take to arrive; a slower one gets 408.
    #[arg(long, value_name = "S", default_value_t = crate::server::DEFAULT_BODY_TIMEOUT_S, value_parser = parse::positive_seconds)]
    pub body_timeout: f64,
    /// Seconds a keep-alive connection may wait for its next request (or leave its response
    /// unread) before it is closed.
    #[arg(long, value_name = "S", default_value_t = crate::server::DEFAULT_IDLE_TIMEOUT_S, value_parser = parse::positive_seconds)]
    pub idle_timeout: f64,
    /// After SIGTERM or Ctrl-C, seconds the requests in flight may take to finish (new ones
    /// get 503 meanwhile); the server exits then even if some are still running.
    #[arg(long, value_name = "S", default_value_t = crate::server::DEFAULT_DRAIN_TIMEOUT_S, value_parser = parse::positive_seconds)]
    pub drain_timeout: f64,
    /// Connections open at once; more are closed as they arrive.
    #[arg(long, default_value_t = crate::server::DEFAULT_MAX_CONNECTIONS, value_parser = parse::positive_count)]
    pub max_connections: usize,
    /// Require this bearer token (`Authorization: Bearer KEY`) on every request but the
    /// health probes; 401 without it. Prefer the environment variable: a flag shows in `ps`.
    #[arg(
        long,
        env = "ACCEVAL_API_KEY",
        hide_env_values = true,
        value_name = "KEY"
    )]
    pub api_key: Option<String>,
    /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
}

/// TLS for the load generators' client (MindIE's CA_CERT, CERT_FILE, KEY_FILE, CRL_FILE).
#[derive(Debug, Clone, Args)]
pub struct TlsArgs {
    /// CA certificate(s) (PEM) the server's certificate must chain to [default: the system's].
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Client certificate chain (PEM), for servers that ask for one.
    #[arg(long, requires = "key", value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, requires = "cert", value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Certificate revocation list(s) (PEM) checked against the server's chain (repeatable).
    #[arg(long, value_name = "FILE")]
    pub crl: Vec<PathBuf>,
}

impl TlsArgs {
    pub fn tls(&self) -> crate::load::client::Tls {
        crate::load::client::Tls {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            crl: self.crl.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct QpsArgs {
    /// The server, e.g. http://127.0.0.1:8000 (https:// with --cacert), or a load balancer
    /// in front of several. Repeat it for a cluster of servers the client balances itself
    /// (§7.2.5 b): each request goes to the one with the fewest in flight, and every step
    /// reports each server's share and latencies.
    #[arg(long, required = true, value_name = "URL")]
    pub url: Vec<String>,
    /// The model name on the server (/v2/models/NAME/infer). A zoo name also selects its
    /// input set as the request inputs.
    #[arg(long)]
    pub model: String,
    /// The latency bound(s), e.g. p99<=50ms, avg<=100ms, p90<=20ms,p99<=50ms (avg, p50,
    /// p75, p90, p95, p99, p99.9, max; units us, ms, s).
    #[arg(long, default_value = crate::load::qps::DEFAULT_SLO)]
    pub slo: String,
    /// Largest share of failed requests a passing step may have (0.01 = 1 %), in [0, 1).
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_ERROR_BUDGET)]
    pub error_budget: f64,
    #[arg(long, value_enum, default_value_t = LoadMode::Open)]
    pub mode: LoadMode,
    /// Open loop: how arrivals are spaced.
    #[arg(long, value_enum, default_value_t = Arrival::Poisson)]
    pub distribution: Arrival,
    /// Seed of the Poisson arrivals (and of generated inputs).
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_SEED)]
    pub seed: u64,
    /// Open loop: the first rate tried, req/s [default: half the rate one client reaches].
    #[arg(long)]
    pub start_rate: Option<f64>,
    /// Open loop: the highest rate tried, req/s.
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_MAX_RATE)]
    pub max_rate: f64,
    /// Open loop: stop bisecting when the bracket is narrower than this share (0.05 = 5 %).
    #[arg(long = "search-precision", default_value_t = crate::load::qps::DEFAULT_PRECISION, value_name = "SHARE")]
    pub precision: f64,
    /// Refused: it meant the search's share here and a numeric format in `train`.
    #[arg(
        long = "precision",
        hide = true,
        value_name = "X",
        allow_hyphen_values = true
    )]
    pub old_precision: Option<String>,
    /// Closed loop: the concurrency levels to sweep.
    #[arg(long, value_delimiter = ',', default_values_t = crate::load::qps::DEFAULT_CONCURRENCY.to_vec())]
    pub concurrency: Vec<usize>,
    /// Seconds each step is measured (after its warm-up); a step also runs until it has the
    /// samples its SLO percentile needs.
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_STEP_DURATION_S, value_name = "S")]
    pub step_duration: f64,
    /// Seconds of each step sent before measuring.
    #[arg(long = "warmup-s", default_value_t = crate::load::qps::DEFAULT_WARMUP_S, value_name = "S")]
    pub warmup: f64,
    /// Refused: `--warmup` counts runs in `bench` and requests in `llm`.
    #[arg(
        long = "warmup",
        hide = true,
        value_name = "X",
        allow_hyphen_values = true
    )]
    pub old_warmup: Option<String>,
    /// A request that has not answered after this many seconds is a failure (timeout).
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_TIMEOUT_S, value_name = "S")]
    pub timeout: f64,
    /// Send tensors in Triton's binary extension instead of JSON.
    #[arg(long)]
    pub binary: bool,
    /// A request body file (v2 JSON) sent as is, instead of generated inputs.
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
    /// Shape for a generated input with dynamic dims, NAME:DxDxD (repeatable).
    #[arg(long = "shape", value_name = "NAME:SHAPE")]
    pub shapes: Vec<InputShape>,
    /// Open connections at most (each carries one request at a time).
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// A successful response body longer than this fails (response_too_large), bytes.
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_MAX_RESPONSE_BYTES, value_name = "BYTES")]
    pub max_response_bytes: usize,
    /// Bytes of an error body kept for its message (the rest is not read).
    #[arg(long, default_value_t = crate::load::qps::DEFAULT_MAX_ERROR_BYTES, value_name = "BYTES")]
    pub max_error_bytes: usize,
    #[command(flatten)]
    pub tls: TlsArgs,
    // --out DIR holds qps.json, qps_curve.csv and qps.svg.
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// The server, e.g. http://127.0.0.1:8080 (client mode).
    #[arg(long, required_unless_present = "engine")]
    pub url: Option<String>,
    /// The model name the server knows; in engine mode, the GGUF file.
    #[arg(long)]
    pub model: String,
    /// Engine mode (MindIE's engine mode): run the model in this process instead of calling
    /// a server: candle's quantized llama family from the GGUF --model, on the CPU (`candle`)
    /// or an NVIDIA GPU (`candle:cuda[@N]`, with the candle-cuda feature); needs --tokenizer
    /// (the model's tokenizer.json).
    #[arg(long, conflicts_with = "url")]
    pub engine: Option<crate::llm::Engine>,
    #[arg(long, value_enum, default_value_t = crate::protocol::generate::Api::Openai)]
    pub api: crate::protocol::generate::Api,
    /// Send non-streaming requests (FirstTokenTime is then the whole response time).
    #[arg(long)]
    pub no_stream: bool,
    /// `synthetic` (MindIE's synthetic data: --synthetic-config, or without it MindIE's
    /// sample configuration), a JSONL file of {"prompt", "max_tokens"}, or with
    /// --dataset-type a GSM8K file or an MMLU directory.
    #[arg(long, default_value = "synthetic")]
    pub dataset: String,
    /// What --dataset is: `gsm8k` (JSONL of {"question", "answer" ending '#### N'}) or `mmlu`
    /// (a directory of test/SUBJECT_test.csv and dev/SUBJECT_dev.csv, 5-shot) [default:
    /// synthetic or jsonl, from --dataset].
    #[arg(long, value_parser = ["synthetic", "jsonl", "gsm8k", "mmlu"], value_name = "TYPE")]
    pub dataset_type: Option<String>,
    /// Accuracy mode (MindIE's --TestAccuracy): score every answer of a gsm8k or mmlu
    /// dataset; the accuracy goes in result_common.csv. Use greedy sampling, e.g.
    /// --sampling-params '{"temperature": 0}'.
    #[arg(long)]
    pub test_accuracy: bool,
    /// MindIE's synthetic_config.json: Input/Output length distributions, RequestCount
    /// [default: MindIE's sample: input uniform 1..200, output gaussian mean 100 var 200
    /// clipped to 1..100, 100 requests].
    #[arg(long, value_name = "FILE")]
    pub synthetic_config: Option<PathBuf>,
    /// Requests to send [default: the dataset's size; prompts are reused in turn].
    #[arg(long)]
    pub request_count: Option<usize>,
    /// A Hugging Face tokenizer.json: counts input and generated tokens when the server's
    /// responses carry no usage (before falling back to counting events).
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// max_tokens for JSONL prompts that give none.
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_MAX_OUTPUT_LEN)]
    pub max_output_len: u64,
    /// Requests in flight at once, 1..1000 (MindIE's default is 128).
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// Engine mode: static batching of up to N requests whose prompts have the same token
    /// length (prefilled together, then decoded together until each has its tokens; MindIE's
    /// maxBatchSize). 1: no batching, each request runs alone.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub max_batch_size: usize,
    /// Open-loop request rates, req/s: one run per rate (at most --concurrency in flight).
    #[arg(long, value_delimiter = ',', value_name = "R,R,...")]
    pub request_rate: Vec<f64>,
    #[arg(long, value_enum, default_value_t = Arrival::Poisson)]
    pub distribution: Arrival,
    /// Seed of the synthetic lengths and the Poisson arrivals.
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_SEED)]
    pub seed: u64,
    /// Warm-up requests before measuring, 0..1000.
    #[arg(long = "warmup-requests", default_value_t = crate::llm::settings::DEFAULT_WARMUP, value_name = "N")]
    pub warmup: usize,
    /// Refused: `--warmup` counts runs in `bench` and seconds in `qps`.
    #[arg(
        long = "warmup",
        hide = true,
        value_name = "X",
        allow_hyphen_values = true
    )]
    pub old_warmup: Option<String>,
    /// Sampling parameters passed through, JSON: '{"temperature": 0.0}'.
    #[arg(long, value_name = "JSON")]
    pub sampling_params: Option<String>,
    /// Goodput bounds: ttft<=500ms,tpot<=50ms,e2el<=10s.
    #[arg(long)]
    pub slo: Option<String>,
    /// A request not finished after this many seconds fails (timeout).
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_TIMEOUT_S, value_name = "S")]
    pub timeout: f64,
    /// Open connections at most (MindIE's MAX_LINK_NUM).
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// The longest SSE line or event (and whole non-streamed response) buffered; a longer
    /// one fails the request (response_too_large), bytes.
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_MAX_EVENT_BYTES, value_name = "BYTES")]
    pub max_event_bytes: usize,
    /// Bytes of an error body kept for its message (the rest is not read).
    #[arg(long, default_value_t = crate::llm::settings::DEFAULT_MAX_ERROR_BYTES, value_name = "BYTES")]
    pub max_error_bytes: usize,
    #[command(flatten)]
    pub tls: TlsArgs,
    // --out DIR holds report.json, result_common.csv, result_perf.csv, requests.csv.
    #[command(flatten)]
    pub output: OutputArgs,
}
