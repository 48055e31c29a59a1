//! A scheduler's handles on the view (the launches of one offer, the
//! planning step), the [`Scheduler`] trait, and the offer and plan calls
//! the owners make.

use super::*;

/// A decision: run `task` on `worker`, reading its input from `source`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub task: TaskRef,
    pub worker: WorkerId,
    pub source: WorkerId,
    pub len: u64,
    /// A backup attempt of a task that already runs (speculation): the
    /// first of its attempts to succeed wins, the owner kills the other.
    /// A reduce's backup (the task is a reduce) has `source` = `worker`
    /// and `len` 0.
    pub backup: bool,
}

impl Assignment {
    pub fn is_local(&self) -> bool {
        self.worker == self.source
    }
}

/// The scheduler's handle on the view during one decision round.
pub struct SchedContext<'a> {
    pub(super) view: &'a mut ClusterView,
    pub(super) launched: Vec<Assignment>,
    pub(super) reduces: Vec<TaskRef>,
}

impl<'a> SchedContext<'a> {
    pub fn new(view: &'a mut ClusterView) -> Self {
        SchedContext {
            view,
            launched: Vec::new(),
            reduces: Vec::new(),
        }
    }

    pub fn view(&self) -> &ClusterView {
        self.view
    }

    /// Launches `task` on `worker` reading from `source` (== `worker` for a
    /// data-local launch). The view is updated at once.
    pub fn launch(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        source: WorkerId,
    ) -> Result<(), SchedError> {
        self.launch_why(task, worker, source, Why::default())
    }

    /// [`SchedContext::launch`], saying why for the decision record.
    pub fn launch_why(
        &mut self,
        task: TaskRef,
        worker: WorkerId,
        source: WorkerId,
        why: Why,
    ) -> Result<(), SchedError> {
        let mut a = Assignment {
            task,
            worker,
            source,
            len: 0,
            backup: false,
        };
        // The replicas as the policy saw them (the launch removes the task).
        let replicas = match self.view.record {
            Some(_) => self
                .view
                .job(task.job)
                .and_then(|j| j.pending_task(task.index))
                .map(|t| t.replicas.clone()),
            None => None,
        };
        let t = self.view.apply(&a)?;
        a.len = t.len;
        self.launched.push(a);
        let locality = replicas
            .is_some()
            .then(|| self.view.locality(worker, source));
        if let (Some(r), Some(locality)) = (self.view.record.as_mut(), locality) {
            let mut why = why;
            if why.rule == Rule::Unexplained && locality == Locality::NodeLocal {
                why.rule = Rule::DataLocal;
            }
            let mut d = Recorder::with_why(r.row(Kind::Map, why.rule), &why);
            d.job = Some(task.job);
            d.task = Some(task.index);
            d.worker = Some(worker);
            d.source = Some(source);
            d.locality = Some(locality);
            d.replicas = replicas.unwrap_or_default();
            r.rows.push(d);
        }
        Ok(())
    }

    /// Launches a backup of running task `task` on `worker` reading from
    /// `source` (speculation's pick, which `offer` makes).
    pub(super) fn launch_backup(
        &mut self,
        b: crate::speculation::Backup,
        worker: WorkerId,
    ) -> Result<(), SchedError> {
        let len = self.view.apply_backup(b.task, worker, b.source)?;
        let kind = if b.reduce { Kind::Reduce } else { Kind::Map };
        self.launched.push(Assignment {
            task: b.task,
            worker,
            source: b.source,
            len,
            backup: true,
        });
        let locality = (!b.reduce).then(|| self.view.locality(worker, b.source));
        if let Some(r) = self.view.record.as_mut() {
            let mut why = Why::rule(Rule::Backup);
            // No progress yet: no finite estimate (and JSON has no
            // infinity: the record would not read back the same).
            why.key = b.why.left_ms.is_finite().then_some(b.why.left_ms);
            let mut d = Recorder::with_why(r.row(kind, Rule::Backup), &why);
            d.job = Some(b.task.job);
            d.task = Some(b.task.index);
            d.worker = Some(worker);
            d.source = (!b.reduce).then_some(b.source);
            d.locality = locality;
            r.rows.push(d);
        }
        Ok(())
    }

    /// Records that the policy declined the rest of this offer, and why
    /// (a no-op unless the view records decisions).
    pub fn decline(&mut self, why: Why) {
        if let Some(r) = self.view.record.as_mut() {
            r.declined = Some(why);
        }
    }

    /// Gives `worker`'s free slots, one at a time, to `choose`, which names
    /// a pending task and the worker to read its input from, or nothing.
    /// Stops when the worker is full, `choose` has nothing, or a launch is
    /// refused (only a view inconsistency gets there: never spin on it).
    /// Returns how many tasks it launched.
    pub fn fill(
        &mut self,
        worker: WorkerId,
        choose: impl FnMut(&ClusterView) -> Option<(TaskRef, WorkerId)>,
    ) -> u32 {
        self.fill_by(worker, Rule::Unexplained, choose)
    }

    /// [`SchedContext::fill`], recording each launch under `rule` (a launch
    /// that reads its input where it runs as data-local, unless the rule is
    /// [`Rule::Plan`]).
    pub fn fill_by(
        &mut self,
        worker: WorkerId,
        rule: Rule,
        mut choose: impl FnMut(&ClusterView) -> Option<(TaskRef, WorkerId)>,
    ) -> u32 {
        self.fill_why(worker, |view| {
            choose(view)
                .map(|(task, source)| Pick {
                    task,
                    source,
                    why: Why::rule(if source == worker && rule != Rule::Plan {
                        Rule::DataLocal
                    } else {
                        rule
                    }),
                })
                .ok_or_else(|| {
                    if rule == Rule::Plan {
                        Why::rule(Rule::NotPlanned)
                    } else {
                        Why::default()
                    }
                })
        })
    }

    /// [`SchedContext::fill`] with reasons: `choose` names a [`Pick`], or
    /// says why it launches nothing (for the decision record).
    pub fn fill_why(
        &mut self,
        worker: WorkerId,
        mut choose: impl FnMut(&ClusterView) -> Result<Pick, Why>,
    ) -> u32 {
        let mut launched = 0;
        while self.view.free_slots(worker) > 0 {
            let p = match choose(self.view) {
                Ok(p) => p,
                Err(why) => {
                    self.decline(why);
                    break;
                }
            };
            if self.launch_why(p.task, worker, p.source, p.why).is_err() {
                break;
            }
            launched += 1;
        }
        launched
    }

    /// Starts waiting reduce `task` on `worker` (a reduce-capable worker
    /// with a free slot). The view is updated at once.
    pub fn launch_reduce(&mut self, task: TaskRef, worker: WorkerId) -> Result<(), SchedError> {
        self.view.apply_reduce(task, worker)?;
        self.reduces.push(task);
        if let Some(r) = self.view.record.as_mut() {
            let mut d = r.row(Kind::Reduce, Rule::ReducePlacement);
            d.job = Some(task.job);
            d.task = Some(task.index);
            d.worker = Some(worker);
            r.rows.push(d);
        }
        Ok(())
    }

    pub fn into_launched(self) -> Vec<Assignment> {
        self.launched
    }

    /// The launches of this round so far, in order.
    pub fn launched(&self) -> &[Assignment] {
        &self.launched
    }

    /// The reduces launched, in order.
    pub fn into_reduces(self) -> Vec<TaskRef> {
        self.reduces
    }
}

/// The scheduler's handle during planning: it may ask for public
/// instances and refuse jobs, not launch.
pub struct PlanContext<'a> {
    pub(super) view: &'a mut ClusterView,
    pub(super) now: Millis,
}

impl PlanContext<'_> {
    pub fn view(&self) -> &ClusterView {
        self.view
    }

    pub fn now(&self) -> Millis {
        self.now
    }

    /// Asks the owner for an instance of public type `ty` for `job`; None
    /// when the type is unknown or `max_instances` are already asked for.
    pub fn request_instance(&mut self, ty: usize, job: JobId) -> Option<crate::hybrid::InstanceId> {
        self.view.hybrid.request(self.now, ty, job)
    }

    /// Refuses `job` (the owner fails it with `why`).
    pub fn refuse(&mut self, job: JobId, why: String) {
        self.view.hybrid.refuse(job, why);
    }
}

/// A scheduling policy. See the module docs.
pub trait Scheduler: Send {
    /// The policy's name with its parameters, as reports show it.
    fn name(&self) -> String;

    /// Called at every heartbeat, before any offer, whether or not a slot
    /// is free: a policy that plans when jobs arrive (MROSA, COSHIC) asks
    /// for public instances or refuses jobs here. Default: nothing.
    fn plan(&mut self, _now: Millis, _ctx: &mut PlanContext<'_>) {}

    /// Whether an offer made while no task waits anywhere (no map pending,
    /// no reduce waiting) can change what the policy decides later. A
    /// policy that says no lets the simulators leave idle workers'
    /// heartbeats out (`lab::replay` parks them until a task waits).
    /// Default: yes.
    fn idle_offers_matter(&self) -> bool {
        true
    }

    /// What an offer of a free slot on `worker` at `now` with no task
    /// waiting does to the policy's state, for a policy whose
    /// [`Scheduler::idle_offers_matter`] is false: the simulators call it
    /// in place of the offer they leave out. Default: nothing.
    fn idle_offer(&mut self, _now: Millis, _worker: WorkerId) {}

    /// For a policy whose [`Scheduler::idle_offers_matter`] is false: a
    /// moment after `now` before which, while the view stays as it is, an
    /// offer from a worker that holds none of the pending maps' blocks (no
    /// job has a `local_task` for it) launches no map and changes nothing
    /// in the policy, so the simulators may leave it out. Default: none.
    fn declines_until(&self, _now: Millis, _view: &ClusterView) -> Option<Millis> {
        None
    }

    /// For a policy whose [`Scheduler::idle_offers_matter`] is false: the
    /// least time a wait of a worker's own lasts, if an offer from a worker
    /// that holds none of the pending maps' blocks is declined by such a
    /// wait (DynDLOn's per-worker clock). The first such offer starts it
    /// ([`Scheduler::declined_offer`]), an offer that finds no map pending
    /// ends it ([`Scheduler::idle_offer`]), and until
    /// [`Scheduler::own_wait_ends`] such offers launch nothing and change
    /// nothing else, whatever the rest of the view does: the simulators
    /// may leave them out and tell the policy what the ones left out did
    /// later, in the worker's own order. Default: none.
    fn own_wait_floor(&self) -> Option<Millis> {
        None
    }

    /// With [`Scheduler::own_wait_floor`]: when the wait of `worker` ends,
    /// started at its first declined offer or, if none yet, at `now`; an
    /// offer then may launch. `Millis::MAX` while only a change of the
    /// worker's own (a task of its ending) can end it. Default: none.
    fn own_wait_ends(
        &self,
        _now: Millis,
        _view: &ClusterView,
        _worker: WorkerId,
    ) -> Option<Millis> {
        None
    }

    /// What an offer from `worker` at `now` that holds none of the pending
    /// maps' blocks and is declined within its own wait does to the policy,
    /// for a policy with [`Scheduler::own_wait_floor`]: the simulators call
    /// it in place of such an offer they leave out. Default: nothing.
    fn declined_offer(&mut self, _now: Millis, _worker: WorkerId) {}

    /// `worker` has at least one free slot at time `now`: launch what the
    /// policy wants through `ctx`, or nothing to leave the slots idle until
    /// the next offer.
    fn offer(&mut self, now: Millis, worker: WorkerId, ctx: &mut SchedContext<'_>);

    /// What the run's report should say about the policy besides its
    /// launches (an external policy's calls, refusals and fallbacks).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// Why the policy cannot go on, once it cannot (an external policy in
    /// `strict` mode that failed): the simulators stop the run with it.
    /// Default: never.
    fn failure(&self) -> Option<String> {
        None
    }

    /// Named counts for reports and benches (an external policy's calls,
    /// replies, refusals and fallbacks).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// For a policy that hands offers to a fallback (an external policy):
    /// how many of `job`'s maps it launched itself and how many its
    /// fallback did, since it started. Default: None (it decides alone).
    fn launched_by(&self, _job: JobId) -> Option<LaunchedBy> {
        None
    }
}

/// Who launched a job's maps, for a policy with a fallback
/// ([`Scheduler::launched_by`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchedBy {
    /// Maps the policy launched.
    pub policy: u32,
    /// Maps its fallback launched (offers the policy could not decide).
    pub fallback: u32,
    /// The fallback's name.
    pub fallback_name: String,
}

/// Runs the policy's planning step.
pub fn plan(sched: &mut dyn Scheduler, now: Millis, view: &mut ClusterView) {
    let mut ctx = PlanContext { view, now };
    sched.plan(now, &mut ctx);
}

/// Runs the policy's planning step, then, if `worker` has a free map slot,
/// one offer; then, while speculation is on, the slots it left free (a
/// reduce-only worker's too) go to backups ([`crate::speculation`]).
/// Returns the launches made (a reduce's backup among them: its task is a
/// reduce). The owner calls it at every heartbeat, and drains the view's
/// instance requests and refusals after.
pub fn offer(
    sched: &mut dyn Scheduler,
    now: Millis,
    worker: WorkerId,
    view: &mut ClusterView,
) -> Vec<Assignment> {
    view.note(|| Input::Offer { now, worker });
    plan(sched, now, view);
    // The policy places maps; speculation may also back up a reduce in a
    // reduce-only worker's free slot.
    let maps = view.free_slots(worker) > 0;
    let backups = view.speculation.enabled && view.free_slots_any(worker) > 0;
    if !maps && !backups {
        return Vec::new();
    }
    view.begin_offer(now, worker);
    view.now = now;
    let mut ctx = SchedContext::new(view);
    if maps {
        sched.offer(now, worker, &mut ctx);
    }
    // Speculation takes the slots the policy left free, one at a time.
    if backups {
        while ctx.view.free_slots_any(worker) > 0 {
            let Some(b) = ctx.view.pick_backup(now, worker) else {
                break;
            };
            if ctx.launch_backup(b, worker).is_err() {
                break;
            }
        }
    }
    let launched = ctx.into_launched();
    if maps && launched.is_empty() && view.recording() {
        view.record_idle();
    }
    launched
}

/// Begins a reduce offer in the decision record (see
/// [`crate::offer_reduces`]).
pub(crate) fn begin_reduce_offer(view: &mut ClusterView, now: Millis, worker: WorkerId) {
    view.note(|| Input::ReduceOffer { now, worker });
    view.now = now;
    view.begin_offer(now, worker);
}
