//! A results folder's measured runs, indexed for the calibration
//! ([`Measured`]), and what the calibration predicts from them
//! ([`Predicted`]).

use super::*;
use lab::calibration::fit_transfer;

/// A results folder's measured runs, indexed for the calibration: each
/// run's successful maps and reduces, background processes and seed; the
/// spec's worker roles, pacing and files; each succeeded job's JCT.
pub(super) struct Measured<'a> {
    /// The results folder (its decision records).
    pub(super) dir: &'a Path,
    pub(super) spec: &'a Spec,
    pub(super) points: &'a [crate::experiment::spec::Point],
    pub(super) runs: &'a [RunRecord],
    /// Each succeeded job's measured JCT, by (point, scheduler, rep, job)
    /// (folders from before jobs.csv have none: the per-job tables are
    /// left out).
    pub(super) jobs: BTreeMap<(String, String, u32, String), f64>,
    pub(super) seed_of: BTreeMap<RunKey, u64>,
    pub(super) maps: BTreeMap<RunKey, Vec<&'a TaskRow>>,
    pub(super) reduces: BTreeMap<RunKey, Vec<&'a TaskRow>>,
    pub(super) background: BTreeMap<RunKey, Vec<&'a BackgroundRow>>,
    /// Worker roles: the last `reduce_workers` run reduces only.
    pub(super) runs_maps: Vec<bool>,
    pub(super) runs_reduces: Vec<bool>,
    /// Each point's compute pacing (MB/s per slot), if any.
    pub(super) pacing: BTreeMap<&'a str, f64>,
    /// Each point's emulated disk (MB/s), if any.
    pub(super) disk: BTreeMap<&'a str, f64>,
    /// With a trace, each point's jobs: the file each read (its sample's
    /// input path) and the bytes each of its reduces writes (its scaled
    /// output over its reduces, as `sim trace` charges them).
    pub(super) trace_jobs: BTreeMap<String, Vec<TraceJob>>,
}

/// A trace job as the calibration reads it: [`Measured::trace_jobs`].
#[derive(Clone, Copy)]
pub(super) struct TraceJob {
    file: u64,
    reduce_output: u64,
}

impl<'a> Measured<'a> {
    pub(super) fn new(
        dir: &'a Path,
        spec: &'a Spec,
        points: &'a [crate::experiment::spec::Point],
        runs: &'a [RunRecord],
        tasks: &'a [TaskRow],
        background: &'a [BackgroundRow],
    ) -> anyhow::Result<Self> {
        let jobs_csv = dir.join("jobs.csv");
        let jobs = if jobs_csv.exists() {
            read_csv::<crate::experiment::qos::JobRow>(&jobs_csv)?
                .into_iter()
                .filter(|j| j.state == "succeeded" && j.jct_s.is_finite())
                .map(|j| ((j.point, j.scheduler, j.rep, j.job), j.jct_s))
                .collect()
        } else {
            BTreeMap::new()
        };
        let seed_of = runs
            .iter()
            .map(|r| ((r.point.clone(), r.scheduler.clone(), r.rep), r.seed))
            .collect();
        let (mut maps, mut reduces) = (BTreeMap::new(), BTreeMap::new());
        for t in tasks.iter().filter(|t| t.ok) {
            let key = (t.point.clone(), t.scheduler.clone(), t.rep);
            match t.kind.as_str() {
                "map" => maps.entry(key).or_insert_with(Vec::new).push(t),
                _ => reduces.entry(key).or_insert_with(Vec::new).push(t),
            }
        }
        let mut bg: BTreeMap<RunKey, Vec<&BackgroundRow>> = BTreeMap::new();
        for b in background {
            bg.entry((b.point.clone(), b.scheduler.clone(), b.rep))
                .or_default()
                .push(b);
        }
        let workers = spec.cluster.workers as usize;
        let dedicated = spec.cluster.reduce_workers as usize;
        let mut trace_jobs = BTreeMap::new();
        for p in points {
            let Some(plan) = spec.trace_plan(p.block_bytes)? else {
                continue;
            };
            let jobs = plan
                .jobs
                .iter()
                .map(|j| TraceJob {
                    file: j.file as u64,
                    reduce_output: j.output_bytes / u64::from(j.reduces.unwrap_or(0).max(1)),
                })
                .collect();
            trace_jobs.insert(p.label.clone(), jobs);
        }
        Ok(Measured {
            dir,
            spec,
            points,
            runs,
            jobs,
            seed_of,
            maps,
            reduces,
            background: bg,
            runs_maps: (0..workers)
                .map(|i| dedicated == 0 || i < workers - dedicated)
                .collect(),
            runs_reduces: (0..workers)
                .map(|i| dedicated == 0 || i >= workers - dedicated)
                .collect(),
            pacing: points
                .iter()
                .filter_map(|p| Some((p.label.as_str(), p.slot_rate_mbs?)))
                .collect(),
            disk: points
                .iter()
                .filter_map(|p| Some((p.label.as_str(), p.disk_mbs.filter(|r| *r > 0.0)?)))
                .collect(),
            trace_jobs,
        })
    }

    pub(super) fn reduces_of(&self, k: &RunKey) -> &[&'a TaskRow] {
        self.reduces.get(k).map_or(&[], |v| v.as_slice())
    }

    pub(super) fn seed(&self, k: &RunKey) -> u64 {
        self.seed_of.get(k).copied().unwrap_or(self.spec.seed)
    }

    /// A map's known time: its drawn compute, plus, under compute pacing,
    /// its input at the slot's rate (a task lasts at least that: maps of
    /// different sizes, as a trace's, differ by it).
    pub(super) fn compute(&self, seed: u64, t: &TaskRow) -> anyhow::Result<u64> {
        let paced = self
            .pacing
            .get(t.point.as_str())
            .map_or(0, |&rate| pacing_ms(t.input_bytes, rate));
        Ok(paced + self.drawn(seed, t)?)
    }

    /// A map's known time as a model with (`disk`) or without the disk
    /// term takes it: [`Self::drawn`] or [`Self::compute`].
    pub(super) fn task_compute(&self, seed: u64, t: &TaskRow, disk: bool) -> anyhow::Result<u64> {
        if disk {
            self.drawn(seed, t)
        } else {
            self.compute(seed, t)
        }
    }

    /// A map's drawn compute alone (the spec's `task_time_s`; 0 without):
    /// under the disk term the pacing is a floor on the whole map instead.
    pub(super) fn drawn(&self, seed: u64, t: &TaskRow) -> anyhow::Result<u64> {
        let Some([a, b]) = self.spec.jobs.task_time_s else {
            return Ok(0);
        };
        let i = job_number(&t.job_name)?;
        Ok(TaskCompute {
            min_ms: (a * 1000.0).round() as u64,
            max_ms: (b * 1000.0).round() as u64,
            seed: splitmix64(seed ^ splitmix64(0xc0de ^ i)),
        }
        .for_task(t.task))
    }

    /// A task's job in the trace sample (with a trace).
    fn trace_job(&self, t: &TaskRow) -> anyhow::Result<TraceJob> {
        let i = job_number(&t.job_name)?;
        self.trace_jobs
            .get(&t.point)
            .and_then(|j| j.get(i as usize))
            .copied()
            .with_context(|| format!("job {} is not in the trace sample", t.job_name))
    }

    /// The file a task's job read.
    pub(super) fn file_of(&self, t: &TaskRow) -> anyhow::Result<u64> {
        if self.spec.trace.is_some() {
            return Ok(self.trace_job(t)?.file);
        }
        let i = job_number(&t.job_name)?;
        Ok(if self.spec.jobs.mix.is_empty() {
            i % u64::from(points_files(self.points, &t.point))
        } else {
            i
        })
    }

    /// The bytes reduce `t` writes, which its output's copies send under
    /// the shuffle over the network: a trace's scaled output over the
    /// job's reduces (its jobs move the trace's bytes), a sort's input.
    /// Other workloads' output is not in the results: an error names it.
    pub(super) fn reduce_output(&self, seed: u64, t: &TaskRow) -> anyhow::Result<u64> {
        if let Some(trace) = &self.spec.trace {
            if trace.shuffle != lab::swim::TraceShuffle::Trace {
                anyhow::bail!(
                    "--network-shuffle: the trace's jobs run wordcount (trace.shuffle = \"wordcount\"), whose reduce output the results do not record; replay the trace with shuffle = \"trace\""
                );
            }
            return Ok(self.trace_job(t)?.reduce_output);
        }
        match self.workload_of(seed, &t.job_name).as_deref() {
            Some("sort" | "sort-lines") => Ok(t.input_bytes),
            w => anyhow::bail!(
                "--network-shuffle: job {} runs {}, whose reduce output the results do not record (only trace replays that move the trace's bytes and sorts, whose output is their input)",
                t.job_name,
                w.unwrap_or("an unknown workload")
            ),
        }
    }

    /// A job's workload, for the shuffle ratios: a mix's seeded order, else
    /// the spec's one workload; a trace's jobs with shuffle run wordcount
    /// (`shuffle = "wordcount"`) or give their own shuffle (synthetic).
    pub(super) fn workload_of(&self, seed: u64, job: &str) -> Option<String> {
        let spec = self.spec;
        if let Some(t) = &spec.trace {
            return (t.shuffle == lab::swim::TraceShuffle::Wordcount)
                .then(|| workloads::Workload::Wordcount.name().to_owned());
        }
        if spec.jobs.mix.is_empty() {
            return Some(spec.jobs.workload().name().to_owned());
        }
        let i = job_number(job).ok()?;
        let order = crate::experiment::run::mix_order(&spec.jobs.mix, seed);
        order.get(i as usize).map(|c| c.workload.name().to_owned())
    }

    /// Replicas of point `keys`' blocks: every worker that ran a block
    /// locally or served it, in any run with the same seed (each
    /// repetition loads its own data).
    pub(super) fn replicas(&self, keys: &[&RunKey]) -> anyhow::Result<Replicas> {
        let mut replicas: Replicas = BTreeMap::new();
        for k in keys {
            let seed = self.seed(k);
            for t in &self.maps[*k] {
                replicas
                    .entry((seed, self.file_of(t)?, t.task))
                    .or_default()
                    .insert(worker_id(&t.source)?);
            }
        }
        Ok(replicas)
    }

    /// Each successful run of point `p` (`keys`), ready to simulate.
    pub(super) fn setups<'s>(
        &'s self,
        p: &crate::experiment::spec::Point,
        keys: &[&'s RunKey],
        schedulers: &'s [crate::experiment::spec::NamedScheduler],
        opts: &Options,
    ) -> anyhow::Result<Vec<Setup<'s>>> {
        let spec = self.spec;
        let shuffle_net = if opts.network_shuffle {
            Some(p.shuffle_net(spec).with_context(|| {
                format!(
                    "--network-shuffle: point {} has no NIC rate (cluster.nic_mbps): the shuffle has no link to cross",
                    p.label
                )
            })?)
        } else {
            None
        };
        let mut setups: Vec<Setup> = Vec::new();
        for &k in keys {
            let Some(run) = self
                .runs
                .iter()
                .find(|r| (&r.point, &r.scheduler, r.rep) == (&k.0, &k.1, k.2) && r.status == "ok")
            else {
                continue;
            };
            let Some(named) = schedulers.iter().find(|s| s.label == k.1) else {
                continue;
            };
            let bg = self
                .background
                .get(k)
                .map(|v| v.as_slice())
                .unwrap_or(&[])
                .iter()
                .map(|b| {
                    Ok(BackgroundRun {
                        worker: worker_id(&b.worker)?,
                        start_ms: ms(b.start_s.max(0.0)),
                        end_ms: b.end_s.map_or(u64::MAX, ms),
                    })
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let launched: Vec<&TaskRow> = self.maps[k]
                .iter()
                .chain(self.reduces_of(k))
                .copied()
                .collect();
            let beats = heartbeats(&launched, spec.cluster.workers, p.heartbeat_ms)?;
            let record = if opts.recorded_beats {
                recorded::read(self.dir, k, &self.maps[k])?
            } else {
                recorded::Record::default()
            };
            setups.push(Setup {
                key: k,
                run,
                config: &named.config,
                reduces: named.reduces,
                cluster: ReplayCluster {
                    slots: vec![spec.cluster.slots; spec.cluster.workers as usize],
                    heartbeat_ms: p.heartbeat_ms,
                    phase_ms: beats.0,
                    period_ms: beats.1,
                    out_of_band: p.out_of_band_heartbeat,
                    runs_maps: self.runs_maps.clone(),
                    runs_reduces: self.runs_reduces.clone(),
                    jitter_ms: opts.jitter_ms,
                    jitter_seed: order_seed(run.seed, opts.order_draw),
                    // The measured runs kept a decision record: so do
                    // the simulated ones (it changes no decision).
                    record_decisions: spec.cluster.decisions,
                    // The model's, set per simulation.
                    host_ms_per_start: 0.0,
                    // A spec's workers are alike.
                    slowdown: Vec::new(),
                    // The runs' speculation, by the same rule.
                    speculation: spec.cluster.speculation.clone(),
                    recorded_beats: record.beats.clone(),
                    measured_ms: if opts.measured_times {
                        recorded::measured_ms(&self.maps[k], self.reduces_of(k))?
                    } else {
                        Default::default()
                    },
                    // The model's, set per simulation.
                    disk: None,
                    shuffle_net,
                },
                bg,
                record,
            });
        }
        Ok(setups)
    }

    /// Run `s` simulated under model `m` and remote model `remote`, its
    /// tasks' measured lengths kept if `s` has them and `measured`.
    pub(super) fn simulate(
        &self,
        s: &Setup,
        m: &PointModel,
        remote: RemoteModel,
        replicas: &Replicas,
        measured: bool,
    ) -> anyhow::Result<(ReplayOutcome, Vec<ReplayJob>)> {
        let disk = m.disk_mbs > 0.0;
        let output = |t: &TaskRow| self.reduce_output(s.run.seed, t);
        let jobs = replay_jobs(
            &self.maps[s.key],
            self.reduces_of(s.key),
            s.run.seed,
            m,
            replicas,
            &|seed, t| self.task_compute(seed, t, disk),
            &|t| self.file_of(t),
            s.cluster.shuffle_net.is_some().then_some(&output as _),
        )?;
        let mut jobs = jobs;
        s.record.apply(&mut jobs);
        let mut sched = sched::build(s.config, s.run.seed);
        let mut placer = sched::ReducePlacer::new(s.reduces, s.config);
        let mut cluster = ReplayCluster {
            host_ms_per_start: m.host_ms_per_start,
            disk: disk.then(|| lab::replay::DiskShare {
                mbs: vec![m.disk_mbs; s.cluster.slots.len()],
                slot_mbs: m.disk_slot_mbs,
            }),
            ..s.cluster.clone()
        };
        if !measured {
            cluster.measured_ms.clear();
        }
        let out = replay::replay(
            sched.as_mut(),
            &mut placer,
            &cluster,
            &jobs,
            &s.bg,
            remote,
            GIVE_UP_MS,
        )
        .with_context(|| format!("simulating {} {} rep {}", s.key.0, s.key.1, s.key.2))?;
        Ok((out, jobs))
    }

    /// Point `label`'s model from the runs (`keys`, `setups`) of the
    /// schedulers `keep` accepts.
    pub(super) fn fit_on(
        &self,
        label: &str,
        keys: &[&RunKey],
        setups: &[Setup],
        replicas: &Replicas,
        (host_term, disk): (bool, Option<(f64, f64)>),
        keep: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<PointModel> {
        let runs_used: Vec<RunRows> = keys
            .iter()
            .filter(|k| keep(&k.1))
            .map(|k| (self.maps[*k].as_slice(), self.reduces_of(k), self.seed(k)))
            .collect();
        let mut m = fit_point(
            label,
            &runs_used,
            &|seed, t| self.task_compute(seed, t, disk.is_some()),
            host_term,
            disk,
        )?;
        m.shuffle_ratio = shuffle_ratios(&runs_used, &|seed, job| self.workload_of(seed, job));
        let used: Vec<&Setup> = setups.iter().filter(|s| keep(&s.key.1)).collect();
        m.transfer_ms = fit_transfer(&used, &m, &|s, m, remote| {
            // The fit is the model's: no task keeps its measured length.
            self.simulate(s, m, remote, replicas, false)
        })?;
        Ok(m)
    }

    /// Point `p`'s model (fitted, or `given`), and every run of it
    /// predicted by it (or by the model fitted without its scheduler)
    /// under each remote model, into `out`. `None` when the point has no
    /// run with map attempts.
    pub(super) fn calibrate_point(
        &self,
        p: &crate::experiment::spec::Point,
        schedulers: &'a [crate::experiment::spec::NamedScheduler],
        opts: &Options,
        given: Option<&BTreeMap<String, PointModel>>,
        out: &mut Predicted,
    ) -> anyhow::Result<Option<PointModel>> {
        let keys: Vec<&RunKey> = self.maps.keys().filter(|k| k.0 == p.label).collect();
        if keys.is_empty() {
            return Ok(None);
        }
        let replicas = self.replicas(&keys)?;
        let setups = self.setups(p, &keys, schedulers, opts)?;
        // The disk term, where asked for and the point has a disk: its
        // rate and the slot's pacing.
        let disk = self
            .disk
            .get(p.label.as_str())
            .filter(|_| opts.disk_share)
            .map(|&mbs| {
                (
                    mbs,
                    self.pacing.get(p.label.as_str()).copied().unwrap_or(0.0),
                )
            });
        let fit_on = |keep: &dyn Fn(&str) -> bool| {
            let terms = (opts.host_term, disk);
            self.fit_on(&p.label, &keys, &setups, &replicas, terms, keep)
        };
        let model = match (given, &opts.fit) {
            (Some(given), Fit::From(cal, point)) => {
                let from = point.as_deref().unwrap_or(&p.label);
                let mut m = given.get(from).cloned().with_context(|| {
                    format!(
                        "{}: no model of point {} (it has {})",
                        cal.display(),
                        from,
                        given.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                })?;
                // Another point's model predicts this one: it is this
                // point's model now (the summary says whose it was).
                m.point.clone_from(&p.label);
                check_disk(&m, from, disk.map(|d| d.0), opts.disk_share)?;
                // Blocks of another size: a fair-share transfer takes
                // time in proportion to the bytes it moves.
                let here =
                    super::mean_bytes(keys.iter().flat_map(|k| self.maps[*k].iter().copied()));
                if m.ref_bytes == 0
                    && sizes_differ(&[m.block_bytes as f64, here as f64])
                    && m.block_bytes > 0
                {
                    m.ref_bytes = m.block_bytes;
                    // The fixed models' extra, fitted on one size, scaled
                    // the same way, read by read (a model with a per-MB
                    // term has it).
                    let f = here as f64 / m.block_bytes as f64;
                    for c in [&mut m.cost, &mut m.cost_reader_only] {
                        if c.per_mb_ms == 0.0 {
                            c.ref_bytes = m.block_bytes;
                        }
                    }
                    out.notes.push(format!(
                        "Point {}: its blocks are {:.3} MB, the model's {:.3} MB. The fair-share transfer and \
                         the fixed models' remote extra (source+reader, reader-only) are scaled by each read's \
                         bytes (x {f:.3} on the mean).",
                        p.label,
                        here as f64 / 1e6,
                        m.block_bytes as f64 / 1e6
                    ));
                }
                m
            }
            _ => fit_on(&|_| true)?,
        };
        if let Some(net) = setups.first().and_then(|s| s.cluster.shuffle_net) {
            out.notes.push(format!(
                "Point {}: the shuffle over the network (--network-shuffle): a reduce lasts {:.0} + {:.0} ms \
                 per MB of its measured input (the typical reduce's), or, where longer, its fetch from the \
                 workers that ran its job's maps and then its output sent to {} more replica(s) (on \
                 workers picked by the master's rule), over {:.0} Mbit/s links shared with every \
                 transfer on them, data-remote maps' blocks included (such a map ending no sooner \
                 than its block has crossed).",
                p.label,
                model.reduce_base_ms,
                model.reduce_typical_ms_per_mb,
                net.extra_copies,
                net.link_bpms * 8.0 / 1e3
            ));
        }
        let mut held_out: BTreeMap<String, PointModel> = BTreeMap::new();
        if opts.fit == Fit::HoldOut {
            for sc in schedulers {
                held_out.insert(sc.label.clone(), fit_on(&|s| s != sc.label)?);
            }
        }
        for s in &setups {
            let m = held_out.get(&s.key.1).unwrap_or(&model);
            let real = crate::experiment::agreement::real_launches(
                self.maps[s.key]
                    .iter()
                    .chain(self.reduces_of(s.key))
                    .copied(),
            )?;
            for (label, remote) in m.models() {
                let (sim, _) = self.simulate(s, m, remote, &replicas, true)?;
                out.add(s, label, sim, &self.jobs, &real);
            }
        }
        Ok(Some(model))
    }
}

/// A model of point `from` fitted with (or without) the disk term can
/// predict a point only with the same disk (`here`, MB/s) and only if the
/// disk term is asked for (or not) alike.
fn check_disk(m: &PointModel, from: &str, here: Option<f64>, asked: bool) -> anyhow::Result<()> {
    if m.disk_mbs > 0.0 && !asked {
        anyhow::bail!(
            "the model of point {from} was fitted with the disk term ({} MB/s): ask for it with --disk-share",
            m.disk_mbs
        );
    }
    if asked && here.is_some() && m.disk_mbs != here.unwrap_or(0.0) {
        anyhow::bail!(
            "--disk-share: point {} has a {} MB/s disk, the model of point {from} was fitted {}",
            m.point,
            here.unwrap_or(0.0),
            if m.disk_mbs > 0.0 {
                format!("with a {} MB/s one", m.disk_mbs)
            } else {
                "without the disk term".to_owned()
            }
        );
    }
    Ok(())
}

/// What the calibration predicts: the models, then per simulated run its
/// prediction, its tasks, its jobs beside their measured JCT, and its
/// decision record (by file name).
#[derive(Default)]
pub(super) struct Predicted {
    pub(super) models: Vec<PointModel>,
    pub(super) predictions: Vec<Prediction>,
    pub(super) tasks: Vec<PredictedTask>,
    pub(super) jobs: Vec<PredictedJob>,
    pub(super) decisions: Vec<(String, Vec<sched::decision::Decision>)>,
    pub(super) agreements: Vec<crate::experiment::agreement::AgreementRow>,
    /// What the summary must say about how a model was applied (another
    /// point's blocks of another size).
    pub(super) notes: Vec<String>,
}

impl Predicted {
    /// Run `s` simulated under model `label` (`sim`), beside what was
    /// measured (`measured`: each succeeded job's JCT).
    pub(super) fn add(
        &mut self,
        s: &Setup,
        label: &str,
        mut sim: ReplayOutcome,
        measured: &BTreeMap<(String, String, u32, String), f64>,
        real: &[lab::agreement::Launch],
    ) {
        let agreement = lab::agreement::compare(
            real,
            &crate::experiment::agreement::sim_launches(&sim.runs),
            s.cluster.heartbeat_ms,
        );
        self.agreements
            .push(crate::experiment::agreement::AgreementRow::new(
                s.key,
                label,
                s.cluster.heartbeat_ms,
                &agreement,
            ));
        if !sim.decisions.is_empty() {
            self.decisions.push((
                format!(
                    "{}-{label}.csv.gz",
                    crate::experiment::timeline::run_stem(&s.key.0, &s.key.1, s.key.2)
                ),
                std::mem::take(&mut sim.decisions),
            ));
        }
        self.tasks.extend(sim.runs.iter().map(|r| PredictedTask {
            point: s.key.0.clone(),
            scheduler: s.key.1.clone(),
            rep: s.key.2,
            model: label.into(),
            job: r.task.job.to_string(),
            task: r.task.index,
            kind: if r.reduce { "reduce" } else { "map" }.into(),
            worker: format!("w{}", r.worker.0 + 1),
            source: format!("w{}", r.source.0 + 1),
            start_s: r.start_ms as f64 / 1000.0,
            end_s: r.end_ms as f64 / 1000.0,
        }));
        for &(job, arrival, end) in &sim.jobs {
            let name = format!("job-{}", job.0);
            let key = (s.key.0.clone(), s.key.1.clone(), s.key.2, name);
            if let Some(&measured) = measured.get(&key) {
                self.jobs.push(PredictedJob {
                    point: key.0,
                    scheduler: key.1,
                    rep: key.2,
                    model: label.into(),
                    job: key.3,
                    measured_jct_s: measured,
                    predicted_jct_s: end.saturating_sub(arrival) as f64 / 1000.0,
                });
            }
        }
        self.predictions.push(Prediction {
            point: s.key.0.clone(),
            scheduler: s.key.1.clone(),
            rep: s.key.2,
            model: label.into(),
            measured_mean_jct_s: s.run.mean_jct_s,
            predicted_mean_jct_s: sim.mean_jct_s(),
            measured_makespan_s: s.run.makespan_s,
            predicted_makespan_s: sim.makespan_s(),
            measured_remote: s.run.data_remote,
            predicted_remote: sim.remote_tasks() as u32,
        });
    }
}

/// The seed that orders a run's woken heartbeats (and draws its jitter)
/// under draw `k`: the run's own for 0, another per draw.
pub(super) fn order_seed(run_seed: u64, k: u64) -> u64 {
    if k == 0 {
        run_seed
    } else {
        run_seed ^ splitmix64(k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }
}
