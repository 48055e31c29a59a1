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
    /// How long a request keeps being sent again while the master cannot
    /// be reached (a restart); zero: not at all.
    retry_for: Duration,
}

/// The CLI's default for `--retry-s`: a master restart (replaying its
/// journal, waiting for the workers) takes seconds; this allows minutes.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(180);

/// Waits between tries while the master is away: 200 ms doubling to 5 s.
fn backoff(tries: u32) -> Duration {
    Duration::from_millis((200u64 << tries.min(5)).min(5_000))
}

/// Turns a non-2xx answer into an error carrying the server's message
/// (the one decoder every client uses, [`common::http_client::check`]).
pub async fn check(resp: reqwest::Response, what: &str) -> anyhow::Result<reqwest::Response> {
    Ok(common::http_client::check(resp, what).await?)
}

fn http_client(tls: Option<&common::tls::load::ClientTls>) -> reqwest::Client {
    common::http_client::builder(tls)
        .tcp_nodelay(true)
        .connect_timeout(std::time::Duration::from_secs(5))
        .pool_idle_timeout(common::http::CLIENT_POOL_IDLE)
        .build()
        .expect("HTTP client builds")
}

impl MasterClient {
    /// A client of the master at `base` (plain HTTP, or HTTPS trusting
    /// reqwest's defaults: none, so use [`MasterClient::with_tls`]).
    pub fn new(base: impl Into<String>, token: impl Into<String>) -> Self {
        MasterClient {
            base: base.into().trim_end_matches('/').to_owned(),
            token: token.into(),
            http: http_client(None),
            retry_for: Duration::ZERO,
        }
    }

    /// Trusts `tls`'s authority (the cluster's `ca.pem`) for HTTPS.
    pub fn with_tls(mut self, tls: Option<&common::tls::load::ClientTls>) -> Self {
        self.http = http_client(tls);
        self
    }

    /// The client of `cfg`'s master with `role`'s secret, over HTTPS
    /// trusting the cluster's authority when `[tls]` is on.
    pub fn for_cluster(
        cfg: &common::config::ClusterConfig,
        role: common::credentials::Role,
    ) -> anyhow::Result<Self> {
        let tls = cfg.client_tls()?;
        Ok(MasterClient::new(cfg.master_url(), cfg.secret(role)).with_tls(tls.as_ref()))
    }

    /// A client that, while the master cannot be reached (refused or cut
    /// connections, or a 502/503 from a proxy in front of it), sends a
    /// request again with backoff for up to `retry_for`, saying so on
    /// stderr, as Hadoop's and HDFS's clients retry a restarting
    /// ResourceManager or NameNode. A request that may have reached the
    /// master and is not idempotent (a submission whose connection broke
    /// after it went out) is not sent again.
    pub fn retrying(mut self, retry_for: Duration) -> Self {
        self.retry_for = retry_for;
        self
    }

    /// Sends what `build` makes until the master answers, within
    /// `retry_for`: a GET (`idempotent`) again after any lost connection, a
    /// POST only if it never connected.
    async fn send(
        &self,
        what: &str,
        idempotent: bool,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> anyhow::Result<reqwest::Response> {
        let deadline = std::time::Instant::now() + self.retry_for;
        let mut tries = 0u32;
        let mut said = false;
        loop {
            let sent = build()
                .header(AUTHORIZATION, bearer(&self.token))
                .send()
                .await;
            // A GET that a pooled connection lost before its answer (the
            // other end closed it as the request went out) is sent again,
            // twice, even without retrying (RFC 9110 9.2.2).
            let lost = matches!(&sent, Err(e) if idempotent && e.is_request() && !e.is_timeout());
            let away = match &sent {
                Err(e) => e.is_connect() || lost,
                Ok(r) => matches!(
                    r.status(),
                    reqwest::StatusCode::BAD_GATEWAY | reqwest::StatusCode::SERVICE_UNAVAILABLE
                ),
            };
            let again = if std::time::Instant::now() < deadline {
                away
            } else {
                lost && tries < 2
            };
            if !again {
                return sent.with_context(|| format!("{what}: master unreachable"));
            }
            tries += 1;
            if self.retry_for > Duration::ZERO && !said {
                let why = match &sent {
                    Err(e) => e.to_string(),
                    Ok(r) => r.status().to_string(),
                };
                eprintln!(
                    "{what}: master unreachable ({why}); retrying for up to {} s",
                    self.retry_for.as_secs()
                );
                said = true;
            }
            tracing::debug!("{what}: master unreachable; sending again");
            tokio::time::sleep(if self.retry_for > Duration::ZERO {
                backoff(tries)
            } else {
                Duration::from_millis(100)
            })
            .await;
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
        let url = format!("{}{path}", self.base);
        let resp = self
            .send(&what, true, || self.http.get(&url).timeout(timeout))
            .await?;
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
        let url = format!("{}/v1/files/{name}/replication", self.base);
        // Setting a factor is idempotent.
        let resp = self
            .send(&what, true, || {
                self.http
                    .put(&url)
                    .json(&FileReplication { replication })
                    .timeout(Duration::from_secs(5))
            })
            .await?;
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
        let url = format!("{}/v1/jobs", self.base);
        let resp = self
            .send(&what, false, || {
                self.http
                    .post(&url)
                    .json(spec)
                    .timeout(Duration::from_secs(10))
            })
            .await?;
        let r: JobSubmitted = check(resp, &what).await?.json().await?;
        Ok(r.job)
    }
}
