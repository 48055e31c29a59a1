//! The `master` command line's arguments: its subcommands and their
//! options, parsed by clap.

use super::*;
use common::placement::Placement;

/// `--placement`: `random` or `even`.
fn parse_placement(s: &str) -> Result<Placement, String> {
    s.parse()
}

#[derive(Parser)]
#[command(
    about = "Master of the mini-MapReduce testbed, and its command line",
    after_help = super::exit::HELP
)]
pub struct Cli {
    /// Cluster description.
    #[arg(long, global = true, default_value = "cluster.toml")]
    pub config: PathBuf,
    /// Master URL instead of http://<master.listen> from cluster.toml.
    #[arg(long, global = true)]
    pub master: Option<String>,
    /// While the master cannot be reached (it restarts), send requests
    /// again with backoff for up to this many seconds, saying so on
    /// stderr; 0: fail at once.
    #[arg(long, global = true, default_value_t = crate::ops::client::DEFAULT_RETRY.as_secs())]
    pub retry_s: u64,
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run the master.
    #[command(
        after_help = "Examples:\n  master serve\n  master serve --scheduler delay3 --listen 127.0.0.1:7100\n  master serve --journal-recover"
    )]
    Serve {
        /// Listen here instead of master.listen.
        #[arg(long)]
        listen: Option<SocketAddr>,
        /// Scheduler instead of [scheduler]: a name (`hadoop`) or `policy = "...", key = value`.
        #[arg(long)]
        scheduler: Option<SchedulerConfig>,
        /// Start public instances as this file says (network-namespace hosts
        /// or containers; written by `up --netns` and `up --docker`) instead
        /// of as local processes.
        #[arg(long)]
        instances: Option<PathBuf>,
        /// A job journal damaged before its last line (a changed byte): keep
        /// the entries before the damage, drop the rest and keep the whole
        /// file beside it, instead of refusing to start.
        #[arg(long)]
        journal_recover: bool,
    },
    /// Start the master and all workers as local processes; returns when all registered.
    #[command(
        after_help = "Examples:\n  master up\n  master up --fresh\n  sudo master up --netns\n  master up --docker"
    )]
    Up {
        /// Delete the workers' block stores first.
        #[arg(long)]
        fresh: bool,
        /// Linux netns mode (root): each node in its own network namespace,
        /// links shaped by tc at nic_mbps; see docs/deployments.md.
        #[arg(long)]
        netns: bool,
        /// Name prefix of the namespaces (netns mode).
        #[arg(long, default_value = crate::ops::netns::DEFAULT_PREFIX, requires = "netns")]
        netns_prefix: String,
        /// Container mode: every node in its own Docker container on a
        /// private network (docs/deployments.md); needs static binaries (make docker-bins).
        #[arg(long, conflicts_with = "netns")]
        docker: bool,
        /// Compose project name (container mode).
        #[arg(long, default_value = crate::ops::docker::DEFAULT_PROJECT, requires = "docker")]
        docker_project: String,
        /// Third octet of the private subnet 10.78.N.0/24 (container mode).
        #[arg(long, default_value_t = crate::ops::docker::DEFAULT_SUBNET_THIRD, requires = "docker")]
        docker_subnet: u8,
        /// Where the static `master` and `worker` binaries are (container mode).
        #[arg(long, default_value = crate::ops::docker::DEFAULT_BIN, requires = "docker")]
        docker_bin: PathBuf,
    },
    /// Stop the local cluster started by `up`.
    #[command(after_help = "Examples:\n  master down")]
    Down,
    /// Generate or split a file into blocks and upload its replicas.
    #[command(
        after_help = "Examples:\n  master load --name demo --generate text --blocks 8 --block-size 8MiB\n  master load --name recs --generate records --blocks 4 --block-size 64MiB --placement even\n  master load --name books --file books.txt --block-size 64MiB --replication 2"
    )]
    Load {
        /// Name of the file in the cluster.
        #[arg(long)]
        name: String,
        /// Generate synthetic data of this kind...
        #[arg(long, conflicts_with = "file", requires = "blocks")]
        generate: Option<Generator>,
        /// ...with this many blocks.
        #[arg(long)]
        blocks: Option<u32>,
        /// Or split this local file.
        #[arg(long)]
        file: Option<PathBuf>,
        /// Block size, e.g. 8MiB, 64MB.
        #[arg(long, value_parser = loader::parse_size)]
        block_size: u64,
        /// Replicas per block (default: cluster.replication).
        #[arg(long)]
        replication: Option<u32>,
        /// Seed of data and placement (default: cluster.seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Replica placement: `random` (each block's replicas on random
        /// distinct workers) or `even` (every worker the same share).
        #[arg(long, default_value = "random", value_parser = parse_placement)]
        placement: Placement,
    },
    /// Submit jobs; with --wait, print their reports when they end.
    #[command(
        after_help = "Examples:\n  master submit --workload wordcount --input demo --wait\n  master submit --workload sort --input recs --reduces 2 --output recs-sorted --wait --json\n  master submit --workload sort --input recs --reduces 2 --output-replication 1 --wait\n  master submit --workload input-sink --input demo --count 10 --spread-s 30 --compute-ms 2000:12000\n  master submit --workload synthetic --input demo --reduces 4 --shuffle-ratio 0.5 --output-ratio 0.2 --wait"
    )]
    Submit {
        #[arg(long, value_enum)]
        workload: Workload,
        #[arg(long)]
        input: String,
        #[arg(long)]
        name: Option<String>,
        /// Submit this many identical jobs.
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// Fair-share group (pool) for `fair` and `lsap-fair`.
        #[arg(long)]
        group: Option<String>,
        /// Reduce tasks (wordcount, sort; default 1).
        #[arg(long)]
        reduces: Option<u32>,
        /// Output file name (default `<job name>.out`; with --count, `-<i>` is appended).
        #[arg(long)]
        output: Option<String>,
        /// Emulated compute per map task on top of reading, drawn per task
        /// uniformly from MIN:MAX milliseconds (seeded by cluster.seed and
        /// the job's number), e.g. `2000:12000`.
        #[arg(long, value_parser = parse_compute)]
        compute_ms: Option<(u64, u64)>,
        /// Spread the jobs' arrivals uniformly over this many seconds
        /// (seeded by cluster.seed); default: all at once.
        #[arg(long, default_value_t = 0.0)]
        spread_s: f64,
        #[arg(long)]
        wait: bool,
        /// With --wait: print only a JSON array of the reports on stdout.
        #[arg(long)]
        json: bool,
        /// Seconds after submission by which the job should be done
        /// (`mrosa` and `coshic` rent public instances to meet it).
        #[arg(long)]
        deadline_s: Option<f64>,
        /// Most the job may spend on public instances.
        #[arg(long)]
        budget: Option<f64>,
        /// synthetic: map output bytes per input byte (default 1).
        #[arg(long)]
        shuffle_ratio: Option<f64>,
        /// synthetic: reduce output bytes per shuffle byte (default 1).
        #[arg(long)]
        output_ratio: Option<f64>,
        /// Replicas of the job's output (as HDFS's `dfs.replication` set
        /// per job; TeraSort writes its output at 1); default: the
        /// cluster's `output_replication`, else its `replication`.
        #[arg(long)]
        output_replication: Option<u32>,
    },
    /// List jobs.
    #[command(after_help = "Examples:\n  master jobs")]
    Jobs,
    /// Show one job's report.
    #[command(
        after_help = "Examples:\n  master report job-3\n  master report 3 --wait --json\n  master report job-3 --decisions"
    )]
    Report {
        job: String,
        #[arg(long)]
        json: bool,
        /// Wait for the job to end first.
        #[arg(long)]
        wait: bool,
        /// Print the job's decision record instead: every launch and every
        /// offer it declined, with the rule (needs `master.decisions = true`
        /// in cluster.toml); with --json, the rows as JSON.
        #[arg(long)]
        decisions: bool,
    },
    /// List workers.
    #[command(after_help = "Examples:\n  master workers")]
    Workers,
    /// Run an experiment spec (experiments/<name>.toml) on fresh local
    /// clusters; results in <results>/<name>/<timestamp>/. Needs no cluster.toml.
    #[command(
        after_help = "Examples:\n  master experiment experiments/smoke.toml\n  sudo master experiment experiments/dyndl-real.toml --deployment netns\n  master experiment experiments/swim-hour.toml --results /tmp/results --keep-data"
    )]
    Experiment {
        spec: PathBuf,
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Scratch space for block stores and logs (removed afterwards).
        #[arg(long, default_value = "run/experiments")]
        work: PathBuf,
        /// Keep the scratch space (block stores, configs, logs).
        #[arg(long)]
        keep_data: bool,
        /// Where each run's cluster runs: `processes` (loopback), `netns`
        /// (network namespaces with tc-shaped links; root) or `docker`
        /// (containers on a private network; needs make docker-bins).
        #[arg(long, default_value = "processes", value_parser = ["processes", "netns", "docker"])]
        deployment: String,
        /// The static binaries for `--deployment docker`.
        #[arg(long, default_value = crate::ops::docker::DEFAULT_BIN)]
        docker_bin: PathBuf,
    },
    /// The chaos run: a 5-worker cluster of local processes runs a seeded job
    /// mix while workers are killed, stopped and their replicas corrupted;
    /// checks every job, every output and the healing, and writes
    /// <results>/chaos/<timestamp>/. Needs no cluster.toml; fails if the
    /// cluster did not survive.
    #[command(after_help = "Examples:\n  master chaos\n  master chaos --seed 7 --jobs 60")]
    Chaos {
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 30)]
        jobs: u32,
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Scratch space (cluster config, block stores, logs).
        #[arg(long, default_value = "run/chaos")]
        work: PathBuf,
    },
    /// The randomized fault campaign: a 5-worker cluster (in network
    /// namespaces as root, else local processes) runs wordcount and sort
    /// at a steady rate while a schedule drawn from the seed partitions,
    /// restarts, kills, stops, fills disks and slows disks and NICs; then
    /// --quiet-minutes of jobs without faults; then a checker reads the
    /// whole history. Writes <results>/campaign/<timestamp>/; fails if a
    /// check did not hold.
    #[command(
        after_help = "Examples:\n  master campaign --minutes 30 --seed 1\n  master campaign --minutes 30 --seed 2 --tls\n  master campaign --minutes 2 --mean-gap-s 5 --processes"
    )]
    Campaign {
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Minutes of faults (jobs run throughout).
        #[arg(long, default_value_t = 30.0)]
        minutes: f64,
        /// Mean seconds between faults.
        #[arg(long, default_value_t = 20.0)]
        mean_gap_s: f64,
        /// Seconds between job arrivals.
        #[arg(long, default_value_t = 2.0)]
        arrival_s: f64,
        /// Seconds between resource samples.
        #[arg(long, default_value_t = 30.0)]
        sample_s: f64,
        /// Blocks of each input file (words and records).
        #[arg(long, default_value_t = 16)]
        input_blocks: u32,
        /// Bytes of each input block.
        #[arg(long, default_value_t = 2_000_000)]
        block_bytes: u64,
        /// Minutes of jobs without faults after the last heal; the
        /// resource check's end window lies in them.
        #[arg(long, default_value_t = 5.0)]
        quiet_minutes: f64,
        /// HTTPS on every link (`[tls] enabled = true`; the cluster's
        /// authority and certificates made at start).
        #[arg(long)]
        tls: bool,
        /// Local processes even as root (no partitions, no full disks).
        #[arg(long)]
        processes: bool,
        /// Run the nodes with glibc's per-thread malloc caches (off by
        /// default: they count as heap in use and fill with uptime, so the
        /// check of the heap at rest would judge them, not the nodes).
        #[arg(long)]
        thread_caches: bool,
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Scratch space (cluster config, disks, logs).
        #[arg(long, default_value = "run/campaign")]
        work: PathBuf,
    },
    /// The soak run: the chaos run's cluster and job mix at a steady
    /// arrival rate for --minutes, without faults; the master, every worker
    /// and this client sampled for memory, descriptors and threads; fails
    /// if a job fails, an output differs, or a figure grew by more than 10%
    /// from the tenth minute to the end. Writes <results>/soak/<timestamp>/.
    #[command(
        after_help = "Examples:\n  master soak --minutes 20\n  master soak --minutes 5 --arrival-s 1 --sample-s 30"
    )]
    Soak {
        #[arg(long, default_value_t = 30.0)]
        minutes: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Seconds between samples.
        #[arg(long, default_value_t = 60.0)]
        sample_s: f64,
        /// Seconds between job arrivals.
        #[arg(long, default_value_t = 2.0)]
        arrival_s: f64,
        #[arg(long, default_value = "results")]
        results: PathBuf,
        #[arg(long, default_value = "run/soak")]
        work: PathBuf,
    },
    /// Rewrite an experiment's summary.md and plots from its runs.csv and
    /// meta.json (no runs are repeated).
    #[command(after_help = "Examples:\n  master replot results/dyndl-real/20261127-133758")]
    Replot { dir: PathBuf },
    /// The results browser: static pages over the results tree (an index
    /// and one page a folder: summary, plots, timelines, runs and jobs
    /// filtered, two schedulers side by side).
    #[command(
        after_help = "Examples:\n  master results index\n  master results index --results /tmp/results"
    )]
    Results {
        #[command(subcommand)]
        cmd: crate::results::browse::ResultsCmd,
    },
    /// The papers' claims (experiments/claims/*.toml) judged on their
    /// results folders, and the verdict table generated from them.
    #[command(
        after_help = "Examples:\n  master claims check\n  master claims check --write\n  master claims check --verify --quiet"
    )]
    Claims {
        #[command(subcommand)]
        cmd: crate::claims::ClaimsCmd,
    },
    /// Serve the reference external policy until stopped: delay scheduling
    /// written again from the protocol's messages (`policy = "external"`
    /// with this address reaches it; see docs/schedulers.md).
    #[command(
        after_help = "Examples:\n  master policy-server --listen unix:/tmp/mrtb-policy.sock\n  master policy-server --listen tcp:127.0.0.1:0 --threshold-s 1.5"
    )]
    PolicyServer {
        /// `unix:<path>` or `tcp:<host>:<port>` (port 0: any free port).
        #[arg(long)]
        listen: String,
        /// Seconds a job may be skipped before it reads remotely.
        #[arg(long, default_value_t = 3.0)]
        threshold_s: f64,
    },
    /// Print the external policy protocol's messages as a JSON Schema
    /// (draft 2020-12): the offer a policy is told and its reply, every
    /// field documented; `docs/policy-protocol-v1.schema.json` is this
    /// output. Needs no cluster.
    #[command(
        after_help = "Examples:\n  master policy-schema > policy-protocol.schema.json\n  python3 -c 'import json, jsonschema; s = json.load(open(\"policy-protocol.schema.json\")); jsonschema.validate(view, {**s, \"$ref\": \"#/$defs/OfferMessage\"})'"
    )]
    PolicySchema,
    /// Print a shell completion script for `master` (bash, zsh, fish,
    /// elvish, powershell). Needs no cluster.
    #[command(
        after_help = "Examples:\n  master completions bash > ~/.local/share/bash-completion/completions/master\n  master completions zsh > \"${fpath[1]}/_master\"\n  master completions fish > ~/.config/fish/completions/master.fish"
    )]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// List files and where their blocks are.
    #[command(after_help = "Examples:\n  master files")]
    Files,
    /// Read a file back from its live replicas, block by block in order,
    /// each block's digest checked; to stdout, or with -o to a file
    /// (written whole or not at all).
    #[command(
        after_help = "Examples:\n  master get demo-counts -o counts.txt\n  master get recs-sorted > sorted.txt"
    )]
    Get {
        file: String,
        /// Write here instead of stdout (replaced only once complete).
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// `get` to stdout.
    #[command(after_help = "Examples:\n  master cat demo-counts | sort -k2,2nr | head")]
    Cat { file: String },
    /// Delete a file: its replicas on every worker (refused while a job
    /// reads or writes it); returns once no live worker holds one.
    #[command(after_help = "Examples:\n  master rm demo-counts")]
    Rm { file: String },
    /// The scheduling lab: generate instances, run the offline planners and
    /// the online policies (in the discrete-event simulator) on them, sweep
    /// the papers' simulations. Needs no cluster.
    #[command(
        after_help = "Examples:\n  master sim trace experiments/swim-hour-grid.toml --calibration results/swim-hour-grid/20261125-150012/calibration --workers 60\n  master sim sweep experiments/sim-dyndl-fig5.toml\n  master sim run --servers 20 --tasks 200"
    )]
    Sim {
        #[command(subcommand)]
        cmd: SimCmd,
    },
}

#[derive(Subcommand)]
pub enum SimCmd {
    /// Calibrate the simulator on a real run's results folder (map-only
    /// jobs): fit task times, background and the remote-read cost, simulate
    /// every run and write predicted against measured to DIR/calibration/.
    #[command(
        after_help = "Examples:\n  master sim calibrate results/dyndl-real/20261127-133758\n  master sim calibrate results/scale-dyndl-32/20261126-002815 --model-from results/scale-dyndl-8/20261126-001335/calibration\n  master sim calibrate results/swim-hour/20261125-142849 --hold-out --host-term"
    )]
    Calibrate {
        /// A results folder of `master experiment` (results/<name>/<stamp>).
        dir: PathBuf,
        /// Predict each scheduler's runs with a model fitted on the other
        /// schedulers' runs only (writes DIR/calibration-hold-out/).
        #[arg(long, conflicts_with = "model_from")]
        hold_out: bool,
        /// Predict every run with the models of another calibration folder
        /// (results/<name>/<stamp>/calibration) instead of fitting on DIR:
        /// e.g. the 8-worker runs' model predicting the 32-worker runs of
        /// the same workload family, point by point of the same label
        /// (writes DIR/calibration-from-<name>/).
        #[arg(long)]
        model_from: Option<PathBuf>,
        /// With --model-from: predict every point of DIR by this one point
        /// of the other calibration (a workload it was not fitted on, e.g.
        /// dyndl-real's three points by scale-dyndl-8's 512MB); writes
        /// DIR/calibration-from-<name>-<point>/.
        #[arg(long, requires = "model_from")]
        model_point: Option<String>,
        /// Delay each simulated heartbeat by up to this many ms (seeded per
        /// run, worker and heartbeat), so the workers' heartbeats reach the
        /// scheduler in varying order; writes DIR/calibration[-hold-out]-jitterMS/.
        #[arg(long, default_value_t = 0)]
        heartbeat_jitter_ms: u64,
        /// Simulate every run under its K-th draw of the order in which the
        /// workers a wake asks for (an arrival's out-of-band heartbeats)
        /// reach the scheduler, instead of its own (0): the same runs under
        /// another order, to see how much a prediction moves with it
        /// (writes DIR/calibration...-orderK/).
        #[arg(long, default_value_t = 0, conflicts_with = "recorded_heartbeats")]
        order_draw: u64,
        /// Also fit the host term: a map's overhead grows with the maps
        /// launched on the testbed's shared host in the second before it
        /// (writes DIR/calibration...-host/).
        #[arg(long)]
        host_term: bool,
        /// Replay each run's heartbeats at the times and in the order its
        /// master took them (from the run's decision record, out-of-band
        /// ones included) instead of from fitted phases, with its jobs'
        /// arrivals and its blocks' replicas as the master had them; every
        /// run needs a whole record (writes DIR/calibration...-recorded/).
        #[arg(long, conflicts_with = "heartbeat_jitter_ms")]
        recorded_heartbeats: bool,
        /// Give each task that runs where it ran for real (the same worker
        /// and source) its measured length instead of the fitted model's,
        /// so what is left of the error is the decisions' (writes
        /// DIR/calibration...-measured/).
        #[arg(long)]
        measured_task_times: bool,
        /// Also model the emulated disk (points with `disk_mbs`): every
        /// map's block read shares its source's disk fairly with the other
        /// reads from it (and the reduces' fetches) while it lasts, a map
        /// lasts at least its input at the slot's pacing rate, and the fits
        /// leave that read (or floor) out of the overheads (writes
        /// DIR/calibration...-disk/).
        #[arg(long)]
        disk_share: bool,
        /// Move the shuffle over the spec's NICs, as `sim trace
        /// --network-shuffle` does: a reduce lasts the fitted typical
        /// reduce's time for its measured input, or longer where its fetch
        /// from the workers that ran its job's maps and its output's
        /// copies, sharing those links, take longer; a data-remote map's
        /// block crosses them too (trace replays whose jobs move the
        /// trace's bytes; writes DIR/calibration...-netshuffle/).
        #[arg(long)]
        network_shuffle: bool,
    },
    /// The calibrated simulator's error against the cluster's size: DIRs
    /// are results folders of one workload family at growing worker counts
    /// (experiments/scale-dyndl-8/16/32.toml), the smallest first. Calibrates
    /// on the first, predicts every folder by its models and by its own fit,
    /// and writes per-job errors against workers, a summary and plots to
    /// <results>/<family>-error/<stamp>/.
    #[command(
        after_help = "Examples:\n  master sim scale-error results/scale-dyndl-8/20261126-001335 results/scale-dyndl-16/20261126-002014 results/scale-dyndl-32/20261126-002815"
    )]
    ScaleError {
        #[arg(required = true, num_args = 2..)]
        dirs: Vec<PathBuf>,
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
    /// Generate a seeded instance and write it as JSON.
    #[command(
        after_help = "Examples:\n  master sim gen --servers 50 --tasks 1000 --seed 3 --out instance.json"
    )]
    Gen {
        #[command(flatten)]
        gen: GenArgs,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Run algorithms on an instance (a file, or generated from the
    /// parameters) and print makespan, locality and running time.
    #[command(
        after_help = "Examples:\n  master sim run --instance instance.json\n  master sim run --servers 100 --tasks 2000 --algo hadoop --algo bar --algo \"policy = 'dyndl-on', w_s = 3\""
    )]
    Run {
        /// Instance file (JSON, from `sim gen`); else one is generated.
        #[arg(long)]
        instance: Option<PathBuf>,
        #[command(flatten)]
        gen: GenArgs,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Algorithms: bar, dyndl-off, list, ltfpa, ltfpa-scan, mb (MaxCover-BalAssign), or any scheduler
        /// (hadoop, delay3, dyndl-on, rand, lsap, ...). Repeatable.
        #[arg(long = "algo", default_values_t = ["hadoop".to_string(), "delay3".into(), "policy = 'dyndl-on', w_s = 3".into(), "list".into(), "ltfpa".into(), "bar".into(), "dyndl-off".into()])]
        algos: Vec<String>,
        /// Re-offer period of the simulator (time units).
        #[arg(long, default_value_t = 0.1)]
        tick: f64,
    },
    /// Run an experiment spec with public instance types
    /// (experiments/mrosa-*.toml) in the hybrid-cloud simulator and print
    /// each point's JCT, deadlines met, cost and instances per scheduler.
    #[command(
        after_help = "Examples:\n  master sim hybrid experiments/mrosa-fig4.toml\n  master sim hybrid experiments/mrosa-fig5.toml --workers 32"
    )]
    Hybrid {
        spec: PathBuf,
        /// Private workers instead of the spec's (e.g. thousands).
        #[arg(long)]
        workers: Option<u32>,
    },
    /// Run a trace spec's hour (`[trace]`, e.g. experiments/swim-hour.toml),
    /// or a spec's own input-sink jobs at every point (e.g.
    /// experiments/whatif-dyndl-1000.toml), in the simulator at any scale,
    /// with task times and the remote-read cost of a calibration (`master
    /// sim calibrate`); print each scheduler's mean JCT, makespan, remote
    /// maps and simulation time per point. A reduce's shuffle crosses the
    /// spec's NICs wherever the spec and the calibration allow it (else
    /// the fitted reduce term, said in the notes). Also `sim scale`.
    #[command(alias = "scale")]
    #[command(
        after_help = "Examples:\n  master sim trace experiments/swim-hour.toml --calibration results/swim-hour/20261125-142849/calibration\n  master sim trace experiments/whatif-swim-1000.toml --calibration results/swim-hour/20261125-142849/calibration --workers 1000 --fair-share\n  master sim trace experiments/whatif-swim-1000-shuffle.toml --calibration results/swim-hour-shuffle/20261128-190407/calibration --workers 1000 --fitted-reduce"
    )]
    Trace {
        spec: PathBuf,
        /// A calibration folder (results/<name>/<stamp>/calibration).
        #[arg(long)]
        calibration: PathBuf,
        /// The calibration's point to take the model from (default: its first).
        #[arg(long)]
        point: Option<String>,
        /// Workers instead of the spec's (e.g. 1000).
        #[arg(long)]
        workers: Option<u32>,
        /// Slots per worker instead of the spec's.
        #[arg(long)]
        slots: Option<u32>,
        /// Charge a remote read as the calibration's fair-share transfer
        /// (its source's and reader's links shared by the transfers on
        /// them) instead of its fixed `source+reader` extra.
        #[arg(long)]
        fair_share: bool,
        /// Move the shuffle over the spec's NICs, and refuse to run where
        /// the spec has no NIC rate or the calibration no typical reduce
        /// term: a reduce lasts the calibration's typical time for its
        /// bytes, or longer where its fetch from the workers that ran its
        /// job's maps and its output's copies, sharing those links, take
        /// longer; a data-remote map's block crosses them too (its length
        /// stays the remote model's, or, where longer, until its block has
        /// crossed). The default wherever it can be
        /// (the table's notes say when it could not).
        #[arg(long, conflicts_with = "fitted_reduce")]
        network_shuffle: bool,
        /// Time a reduce by the calibration's fitted per-MB term instead,
        /// loading no link (the default before the shuffle over the links).
        #[arg(long)]
        fitted_reduce: bool,
        /// Slow machines, FRACTION:FACTOR: that share of the workers,
        /// drawn per seed, run every task FACTOR times longer (e.g.
        /// 0.05:10).
        #[arg(long)]
        slow: Option<crate::simulation::trace::Slow>,
        /// Speculative execution on, with the spec's `[cluster.speculation]`
        /// settings or Hadoop's defaults (backups of slow maps and reduces).
        #[arg(long)]
        speculation: bool,
        /// Run this scheduler instead of the spec's (repeat for several):
        /// a name or `policy = "...", key = value` (`policy = "external",
        /// address = "unix:/tmp/p.sock"` for a policy served outside).
        #[arg(long)]
        scheduler: Vec<SchedulerConfig>,
    },
    /// Run a real run's decision record through its policy again, from its
    /// inputs (every change to the scheduler's view and every offer), and
    /// say whether it decides the same, row for row, or where it first
    /// differs. FILE: an experiment's decisions/*.record.json.gz, or the
    /// JSON of GET /v1/decisions?inputs=true. Exits non-zero if it differs.
    #[command(
        after_help = "Examples:\n  master sim recheck results/dyndl-real-decisions/20261125-205258/decisions/512MB-50-DELAY10-r0.record.json.gz"
    )]
    Recheck { file: PathBuf },
    /// Run a sweep spec (experiments/sim-*.toml); results in
    /// <results>/<name>/<timestamp>/.
    #[command(
        after_help = "Examples:\n  master sim sweep experiments/sim-bar-fig7.toml\n  master sim sweep experiments/sim-guo-fig4.toml --results /tmp/results"
    )]
    Sweep {
        spec: PathBuf,
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct GenArgs {
    /// |S|.
    #[arg(long, default_value_t = 50)]
    pub(crate) servers: u32,
    /// Cores per server.
    #[arg(long, default_value_t = 40)]
    pub(crate) cores: u32,
    /// |T|.
    #[arg(long, default_value_t = 100)]
    pub(crate) tasks: u32,
    #[arg(long, default_value_t = 3)]
    pub(crate) replication: u32,
    /// Load skew α.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) alpha: f64,
    /// Initial loads in [0, α·server + β] (BAR's W).
    #[arg(long, default_value_t = 100.0)]
    pub(crate) beta: f64,
    /// Cost model: dyndl (uses --theta) or bar (uses --c-loc, --q).
    #[arg(long, default_value = "dyndl", value_parser = ["dyndl", "bar"])]
    pub(crate) model: String,
    #[arg(long, default_value_t = 1.0)]
    pub(crate) theta: f64,
    #[arg(long, default_value_t = 20.0)]
    pub(crate) c_loc: f64,
    #[arg(long, default_value_t = 1.0)]
    pub(crate) q: f64,
    /// Racks of consecutive servers (default one).
    #[arg(long)]
    pub(crate) racks: Option<u32>,
    /// Replica placement: random, or HDFS's rack-aware (needs --racks >= 2).
    #[arg(long, default_value = "random", value_parser = ["random", "rack-aware"])]
    pub(crate) placement: String,
}

impl GenArgs {
    pub(super) fn params(&self) -> anyhow::Result<GenParams> {
        let p = GenParams {
            servers: self.servers,
            cores: self.cores,
            tasks: self.tasks,
            replication: self.replication,
            alpha: self.alpha,
            beta: self.beta,
            cost: if self.model == "bar" {
                Cost::Bar {
                    c_loc: self.c_loc,
                    q: self.q,
                }
            } else {
                Cost::Dyndl { theta: self.theta }
            },
            idle: None,
            racks: self.racks,
            placement: if self.placement == "rack-aware" {
                sched::model::gen::Placement::RackAware
            } else {
                sched::model::gen::Placement::Random
            },
        };
        p.validate()
            .with_context(|| format!("--{}", p.validate().unwrap_err().key()))?;
        Ok(p)
    }
}
