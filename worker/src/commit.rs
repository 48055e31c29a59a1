//! Asking the master before a reduce's output becomes visible (Hadoop's
//! `canCommit`, `common::wire::CommitRequest`). A reduce makes its output
//! and streams it to its replica targets, but sends them the block's
//! digest (which commits it there) and commits its own copy only once the
//! master says it is still its task's current attempt. A worker cut off
//! from the master keeps asking: its stale attempt never lands a block on
//! a worker the master does not expect it on (a file deleted meanwhile
//! would come back with it), and is killed once the master hears it again.

use crate::fetch::Peers;
use common::http::bearer;
use common::wire::CommitRequest;
use common::{AttemptId, WorkerId};
use reqwest::header::AUTHORIZATION;
use reqwest::StatusCode;
use std::sync::Mutex;
use std::time::Duration;

/// This worker's registration with the master, for the commit requests.
pub struct MasterSession {
    master_url: String,
    /// The id the master gave this worker and its incarnation then; none
    /// before the first registration.
    registered: Mutex<Option<(WorkerId, u64)>>,
    /// How long to wait before asking again (the heartbeat interval).
    retry: Duration,
}

/// Why an attempt may not commit.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused(pub String);

impl MasterSession {
    pub fn new(master_url: String, retry: Duration) -> Self {
        MasterSession {
            master_url,
            registered: Mutex::new(None),
            retry,
        }
    }

    /// The master registered this worker as `id` in its `incarnation`.
    pub fn registered(&self, id: WorkerId, incarnation: u64) {
        *self
            .registered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((id, incarnation));
    }

    fn current(&self) -> Option<(WorkerId, u64)> {
        *self
            .registered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until the master lets `attempt` commit (Ok) or refuses it for
    /// good (the attempt is stale). Unreachable, restarted or not knowing
    /// this worker yet, the master is asked again after the retry interval,
    /// for as long as the attempt lives (killing it drops this future).
    pub async fn may_commit(&self, peers: &Peers, attempt: AttemptId) -> Result<(), Refused> {
        let mut warned = false;
        loop {
            let why = match self.current() {
                None => "not registered with the master yet".to_owned(),
                Some((worker, incarnation)) => {
                    let req = CommitRequest {
                        worker,
                        incarnation,
                        attempt,
                    };
                    match self.ask(peers, &req).await {
                        Ok(None) => return Ok(()),
                        Ok(Some(refused)) => return Err(refused),
                        Err(why) => why,
                    }
                }
            };
            if !warned {
                tracing::warn!(%attempt, reason = %why, "output commit not granted yet; asking again");
                warned = true;
            }
            tokio::time::sleep(self.retry).await;
        }
    }

    /// One request: granted (`Ok(None)`), refused for good, or why to ask
    /// again.
    async fn ask(&self, peers: &Peers, req: &CommitRequest) -> Result<Option<Refused>, String> {
        let resp = send_to_master(peers, &self.master_url, "/v1/workers/commit", req).await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(None);
        }
        let body = resp.text().await.unwrap_or_default();
        let message = common::wire::ErrorBody::message_of(&body);
        match status {
            StatusCode::CONFLICT => Ok(Some(Refused(message))),
            StatusCode::NOT_FOUND => {
                // A master from before commits were asked for: it takes
                // the result as before.
                tracing::warn!(master = %self.master_url, "the master does not know output commits; committing without asking");
                Ok(None)
            }
            _ => Err(format!("master answered {status}: {message}")),
        }
    }
}

/// POSTs `body` to the master's `path` with this worker's credential; the
/// answer, whatever its status, or why none came.
pub(crate) async fn send_to_master<B: serde::Serialize + ?Sized>(
    peers: &Peers,
    master_url: &str,
    path: &str,
    body: &B,
) -> Result<reqwest::Response, String> {
    peers
        .http
        .post(format!("{master_url}{path}"))
        .header(AUTHORIZATION, bearer(&peers.token.get()))
        .json(body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| format!("master unreachable at {master_url}: {e}"))
}
