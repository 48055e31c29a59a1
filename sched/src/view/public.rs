//! The view's hybrid cloud: public instance types, instances booted and
//! gone, the estimates MROSA and COSHIC plan with, a job's QoS.

use super::*;

impl ClusterView {
    /// The hybrid cloud: instance types, instances, estimates.
    pub fn hybrid(&self) -> &crate::hybrid::HybridView {
        &self.hybrid
    }

    /// The tests' handle on the hybrid part. Its owner changes it through
    /// the view's methods below, so the record keeps each change.
    #[cfg(test)]
    pub(crate) fn hybrid_mut(&mut self) -> &mut crate::hybrid::HybridView {
        &mut self.hybrid
    }

    /// The public instance types and how many instances may run at once.
    pub fn set_public_types(&mut self, types: Vec<PublicType>, max_instances: u32) {
        self.note(|| Input::PublicTypes {
            types: types.clone(),
            max_instances,
        });
        self.hybrid.set_types(types, max_instances);
    }

    /// What the owner knows of `worker`'s hardware.
    pub fn set_profile(&mut self, worker: WorkerId, profile: WorkerProfile) {
        self.note(|| Input::Profile { worker, profile });
        self.hybrid.set_profile(worker, profile);
    }

    /// Instance `instance` registered as worker `worker`.
    pub fn instance_up(&mut self, instance: InstanceId, worker: WorkerId) {
        self.note(|| Input::InstanceUp { instance, worker });
        self.hybrid.instance_up(instance, worker);
    }

    /// Instance `instance` stopped (or could not be started).
    pub fn instance_gone(&mut self, instance: InstanceId) {
        self.note(|| Input::InstanceGone { instance });
        self.hybrid.instance_gone(instance);
    }

    /// A map of `len` input bytes took `ms` on `worker`; `local`: it read
    /// its own disk; `output`: the bytes it wrote.
    pub fn note_map(&mut self, worker: WorkerId, len: u64, ms: u64, local: bool, output: u64) {
        self.note(|| Input::MapMeasured {
            worker,
            len,
            ms,
            local,
            output,
        });
        self.hybrid.note_map(worker, len, ms, local, output);
    }

    /// A reduce of `input` bytes took `ms`.
    pub fn note_reduce(&mut self, input: u64, ms: u64) {
        self.note(|| Input::ReduceMeasured { input, ms });
        self.hybrid.note_reduce(input, ms);
    }

    /// The policy's instance requests since the last call, in order.
    pub fn take_requests(&mut self) -> Vec<InstanceRequest> {
        self.note(|| Input::TookRequests);
        self.hybrid.take_requests()
    }

    /// The jobs the policy refused since the last call, with the reason.
    pub fn take_refusals(&mut self) -> Vec<(JobId, String)> {
        self.note(|| Input::TookRefusals);
        self.hybrid.take_refusals()
    }

    /// Sets a job's deadline, budget and sizes.
    pub fn set_job_qos(&mut self, job: JobId, qos: JobQos) {
        self.note(|| Input::Qos {
            job,
            qos: qos.clone(),
        });
        if let Some(j) = self.jobs_mut().get_mut(&job) {
            j.qos = qos;
        }
    }

    pub fn workers(&self) -> impl Iterator<Item = &WorkerView> {
        self.workers.values()
    }
}
