//! Typed client of the master's API, used by the CLI, the loader, the
//! launcher and the tests. Errors carry the server's JSON message.

use anyhow::Context;
use common::http::bearer;
use common::wire::{
    ClusterSummary, FileDeleted, FileInfo, FileReplication, JobReport, JobSubmit, JobSubmitted,
    WorkerInfo,
};
use common::JobId;
use reqwest::header::AUTHORIZATION;
use serde::de::DeserializeOwned;
use std::time::Duration;

#[derive(Clone)]
pub struct MasterClient {
    base: String,
    token: String,
    http: reqwest::Client,
}

/// Turns a non-2xx answer into an error carrying the server's message
/// (the one decoder every client uses, [`common::http_client::check`]).
pub async fn check(resp: reqwest::Response, what: &str) -> anyhow::Result<reqwest::Response> {
    Ok(common::http_client::check(resp, what).await?)
}

impl MasterClient {
    pub fn new(base: impl Into<String>, token: impl Into<String>) -> Self {
        MasterClient {
            base: base.into().trim_end_matches('/').to_owned(),
            token: token.into(),
            http: reqwest::Client::builder()
                .tcp_nodelay(true)
                .connect_timeout(std::time::Duration::from_secs(5))
                .pool_idle_timeout(common::http::CLIENT_POOL_IDLE)
                .build()
                .expect("HTTP client builds"),
        }
    }

    /// The master's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    async fn get<T: DeserializeOwned>(&self, path: &str, timeout: Duration) -> anyhow::Result<T> {
        let what = format!("GET {}{path}", self.base);
        // A GET is idempotent: one that a pooled connection lost before its
        // answer (the other end closed it as the request went out) is sent
        // again, twice at most, on a new connection (RFC 9110 9.2.2).
        let mut tries = 0;
        let resp = loop {
            let sent = self
                .http
                .get(format!("{}{path}", self.base))
                .header(AUTHORIZATION, bearer(&self.token))
                .timeout(timeout)
                .send()
                .await;
            match sent {
                Err(e) if tries < 2 && e.is_request() && !e.is_timeout() => {
                    tries += 1;
                    tracing::debug!(error = %e, "{what}: connection lost; sending again");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => break other.with_context(|| format!("{what}: master unreachable"))?,
            }
        };
        check(resp, &what)
            .await?
            .json()
            .await
            .with_context(|| format!("{what}: bad reply"))
    }

    pub async fn cluster(&self) -> anyhow::Result<ClusterSummary> {
        self.get("/v1/cluster", Duration::from_secs(5)).await
    }

    pub async fn workers(&self) -> anyhow::Result<Vec<WorkerInfo>> {
        self.get("/v1/workers", Duration::from_secs(5)).await
    }

    pub async fn files(&self) -> anyhow::Result<Vec<FileInfo>> {
        self.get("/v1/files", Duration::from_secs(5)).await
    }

    pub async fn file(&self, name: &str) -> anyhow::Result<FileInfo> {
        self.get(&format!("/v1/files/{name}"), Duration::from_secs(5))
            .await
    }

    pub async fn jobs(&self) -> anyhow::Result<Vec<JobReport>> {
        self.get("/v1/jobs", Duration::from_secs(5)).await
    }

    /// The job's report; with `wait`, after it ended (or `wait` elapsed).
    pub async fn job(&self, id: JobId, wait: Option<Duration>) -> anyhow::Result<JobReport> {
        let ms = wait.map_or(0, |d| d.as_millis() as u64);
        self.get(
            &format!("/v1/jobs/{}?wait_ms={ms}", id.0),
            Duration::from_millis(ms) + Duration::from_secs(10),
        )
        .await
    }

    /// The master's decision record, all of it or job `job`'s.
    pub async fn decisions(&self, job: Option<JobId>) -> anyhow::Result<common::wire::DecisionLog> {
        let q = job.map_or(String::new(), |j| format!("?job={}", j.0));
        self.get(&format!("/v1/decisions{q}"), Duration::from_secs(60))
            .await
    }

    /// The master's whole decision record with its inputs (every change to
    /// the scheduler's view and every offer), to run it again.
    pub async fn decision_record(&self) -> anyhow::Result<common::wire::DecisionLog> {
        self.get("/v1/decisions?inputs=true", Duration::from_secs(120))
            .await
    }

    /// Waits until job `id` ends, however long that takes.
    pub async fn wait_job(&self, id: JobId) -> anyhow::Result<JobReport> {
        loop {
            let r = self.job(id, Some(Duration::from_secs(60))).await?;
            if r.state.is_done() {
                return Ok(r);
            }
        }
    }

    /// Asks the master to keep every block of `name` at `replication`
    /// replicas (re-replication after losses, trimming above it).
    pub async fn set_replication(&self, name: &str, replication: u32) -> anyhow::Result<()> {
        let what = format!("PUT {}/v1/files/{name}/replication", self.base);
        let resp = self
            .http
            .put(format!("{}/v1/files/{name}/replication", self.base))
            .header(AUTHORIZATION, bearer(&self.token))
            .json(&FileReplication { replication })
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .with_context(|| format!("{what}: master unreachable"))?;
        check(resp, &what).await?;
        Ok(())
    }

    /// Deletes file `name` (see `Master::delete_file`): its holders drop
    /// their replicas at their next heartbeat.
    pub async fn delete_file(&self, name: &str) -> anyhow::Result<FileDeleted> {
        let what = format!("DELETE {}/v1/files/{name}", self.base);
        let resp = self
            .http
            .delete(format!("{}/v1/files/{name}", self.base))
            .header(AUTHORIZATION, bearer(&self.token))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .with_context(|| format!("{what}: master unreachable"))?;
        Ok(check(resp, &what).await?.json().await?)
    }

    /// Whether file `name` is gone from the master's catalog and from every
    /// live worker (not found), not yet (being deleted) or still there.
    pub async fn file_gone(&self, name: &str) -> anyhow::Result<bool> {
        let what = format!("GET {}/v1/files/{name}", self.base);
        let resp = self
            .http
            .get(format!("{}/v1/files/{name}", self.base))
            .header(AUTHORIZATION, bearer(&self.token))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .with_context(|| format!("{what}: master unreachable"))?;
        match resp.status() {
            reqwest::StatusCode::NOT_FOUND => Ok(true),
            reqwest::StatusCode::CONFLICT | reqwest::StatusCode::OK => Ok(false),
            _ => check(resp, &what).await.map(|_| false),
        }
    }

    pub async fn submit(&self, spec: &JobSubmit) -> anyhow::Result<JobId> {
        let what = format!("POST {}/v1/jobs", self.base);
        let resp = self
            .http
            .post(format!("{}/v1/jobs", self.base))
            .header(AUTHORIZATION, bearer(&self.token))
            .json(spec)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .with_context(|| format!("{what}: master unreachable"))?;
        let r: JobSubmitted = check(resp, &what).await?.json().await?;
        Ok(r.job)
    }
}
