//! The sessions of the HTTP transport, counted and bound where they are made.
//!
//! [`BoundSessions`] is the [`SessionManager`] rmcp's Streamable HTTP service calls: rmcp's own
//! [`LocalSessionManager`] underneath, and in [`create_session`](SessionManager::create_session)
//! the two rules a header check in front of rmcp cannot hold (a request rmcp reads as having no
//! session, such as one whose `Mcp-Session-Id` is not UTF-8, still reaches it):
//!
//! ```text
//! create_session ─▶ a request the checks passed (its caller in OPENER)?   else refused
//!                ─▶ shutting down?  --max-sessions open?                   refused (503)
//!                ─▶ LocalSessionManager::create_session; the id bound to the caller's token
//! ```
//!
//! The checks ([`super::http`]) answer another token's session id as an unknown one (404) and
//! end the sessions of a token the file no longer accepts ([`BoundSessions::close_unless`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

/// Who a session belongs to: the hash of the token that opened it (`None`: no tokens asked).
pub(super) type Owner = Option<Arc<str>>;

/// Why a session was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// As many sessions are open as allowed.
    Full(usize),
    /// The server is going away.
    Draining,
}

/// The caller of the request being answered, for [`BoundSessions::create_session`]; set by the
/// checks around the request they pass on to rmcp (which answers in the same task).
#[derive(Debug)]
pub(super) struct Opener {
    pub(super) owner: Owner,
    /// Set when a session was refused, so the checks answer 503 instead of rmcp's 500.
    pub(super) refused: OnceLock<Refusal>,
}

tokio::task_local! {
    pub(super) static OPENER: Opener;
}

/// Why [`BoundSessions`] failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum BoundError {
    #[error("{0} sessions are open, as many as the server allows")]
    Full(usize),
    #[error("the server is shutting down")]
    Draining,
    #[error("a session is made only for a request the checks passed")]
    NoOpener,
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's local sessions under a limit, each bound to the token that opened it.
#[derive(Debug)]
pub(super) struct BoundSessions {
    local: LocalSessionManager,
    max: usize,
    owners: Mutex<HashMap<SessionId, Owner>>,
    /// Held while a session is counted and made, so the limit is exact.
    creating: tokio::sync::Mutex<()>,
    draining: AtomicBool,
}

impl BoundSessions {
    pub(super) fn new(local: LocalSessionManager, max: usize) -> Self {
        BoundSessions {
            local,
            max: max.max(1),
            owners: Mutex::new(HashMap::new()),
            creating: tokio::sync::Mutex::new(()),
            draining: AtomicBool::new(false),
        }
    }

    /// From now on no session is made.
    pub(super) fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Sessions open now.
    pub(super) async fn len(&self) -> usize {
        self.local.sessions.read().await.len()
    }

    /// The owner of session `id`, if it is open.
    pub(super) fn owner(&self, id: &str) -> Option<Owner> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Ends every session whose owner `keep` refuses (a revoked token's); returns how many.
    pub(super) async fn close_unless(&self, keep: impl Fn(&Owner) -> bool) -> usize {
        let gone: Vec<SessionId> = self
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, owner)| !keep(owner))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            let _ = self.close_session(id).await;
        }
        gone.len()
    }

    fn refuse(&self, why: Refusal) -> BoundError {
        let _ = OPENER.try_with(|o| o.refused.set(why));
        match why {
            Refusal::Full(n) => BoundError::Full(n),
            Refusal::Draining => BoundError::Draining,
        }
    }
}

impl SessionManager for BoundSessions {
    type Error = BoundError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), BoundError> {
        // Fail closed: a session made outside the checks would belong to nobody.
        let owner = OPENER
            .try_with(|o| o.owner.clone())
            .map_err(|_| BoundError::NoOpener)?;
        let _one = self.creating.lock().await;
        if self.draining.load(Ordering::SeqCst) {
            return Err(self.refuse(Refusal::Draining));
        }
        if self.len().await >= self.max {
            return Err(self.refuse(Refusal::Full(self.max)));
        }
        let (id, transport) = self.local.create_session().await?;
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), owner);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, BoundError> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, BoundError> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), BoundError> {
        self.owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, BoundError> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), BoundError> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, BoundError> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, BoundError> {
        Ok(self.local.resume(id, last_event_id).await?)
    }

    // `restore_session` keeps the default (not supported): rmcp's local one makes a session
    // for any id it is given, past the limit and bound to nobody.
}

/// Whether `id` has the shape of the ids this server gives (a lowercase UUID, as
/// [`LocalSessionManager`] makes them): anything else is a malformed header, not an unknown
/// session.
pub(super) fn well_formed(id: &[u8]) -> bool {
    id.len() == 36
        && id.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => matches!(b, b'0'..=b'9' | b'a'..=b'f'),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_ids_the_server_gives_are_well_formed() {
        let given = rmcp::transport::common::server_side_http::session_id();
        assert!(well_formed(given.as_bytes()), "{given}");
        assert!(well_formed(b"0f0e4b62-8d0b-4b7e-9d0a-5c1c2d3e4f50"));
        let hostile: [&[u8]; 8] = [
            b"",
            b"\xff\xfe\xfd",
            b"0f0e4b62-8d0b-4b7e-9d0a-5c1c2d3e4f5\x80",
            b"0F0E4B62-8D0B-4B7E-9D0A-5C1C2D3E4F50",
            b"0f0e4b62-8d0b-4b7e-9d0a-5c1c2d3e4f50 ",
            b"0f0e4b62x8d0b-4b7e-9d0a-5c1c2d3e4f50",
            b"../../etc/passwd",
            b"not-a-session",
        ];
        for id in hostile {
            assert!(!well_formed(id), "{}", String::from_utf8_lossy(id));
        }
    }

    #[tokio::test]
    async fn a_session_is_made_only_for_a_caller_and_within_the_limit() {
        let sessions = BoundSessions::new(LocalSessionManager::default(), 1);
        assert!(matches!(
            sessions.create_session().await,
            Err(BoundError::NoOpener)
        ));
        let opener = || Opener {
            owner: Some(Arc::from("alice")),
            refused: OnceLock::new(),
        };
        let (id, _t) = OPENER
            .scope(opener(), sessions.create_session())
            .await
            .unwrap();
        assert_eq!(sessions.owner(&id), Some(Some(Arc::from("alice"))));
        let refused = OPENER
            .scope(opener(), async {
                let made = sessions.create_session().await;
                (made.is_err(), OPENER.with(|o| o.refused.get().copied()))
            })
            .await;
        assert_eq!(refused, (true, Some(Refusal::Full(1))));
        assert_eq!(
            sessions
                .close_unless(|o| o.as_deref() != Some("alice"))
                .await,
            1
        );
        assert_eq!(sessions.owner(&id), None);
        assert_eq!(sessions.len().await, 0);
        sessions.drain();
        assert!(matches!(
            OPENER.scope(opener(), sessions.create_session()).await,
            Err(BoundError::Draining)
        ));
    }
}
