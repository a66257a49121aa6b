//! The LISTEN task behind [`Store::wake`](crate::store::Store::wake): one connection outside
//! the pool, `LISTEN skillcat_changes`, each notification a wake; reconnected with backoff
//! (100 ms doubling to 10 s, with jitter) when it drops, and a wake after every (re)connect,
//! since NOTIFY is not replayed: whatever was committed meanwhile is found by polling the feed.

use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::AsyncMessage;

use super::CHANNEL;
use super::tls::MakeRustls;

const FIRST_DELAY: Duration = Duration::from_millis(100);
const MAX_DELAY: Duration = Duration::from_secs(10);

/// Starts the task; the receiver wakes on each notification (its value counts wakes).
pub(super) fn spawn(
    config: tokio_postgres::Config,
    tls: MakeRustls,
) -> (watch::Receiver<u64>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(0u64);
    let task = tokio::spawn(async move {
        let mut delay = FIRST_DELAY;
        loop {
            if tx.is_closed() {
                return;
            }
            // It was listening: the backoff starts over.
            if listen_once(&config, tls.clone(), &tx).await {
                delay = FIRST_DELAY;
            }
            tokio::time::sleep(jitter(delay)).await;
            delay = (delay * 2).min(MAX_DELAY);
        }
    });
    (rx, task)
}

/// Connects, listens and forwards notifications until the connection ends; whether it was
/// listening (so the next attempt starts with a short delay).
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: MakeRustls,
    tx: &watch::Sender<u64>,
) -> bool {
    let Ok((client, mut connection)) = config.connect(tls).await else {
        return false;
    };
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    let forward = tx.clone();
    // The connection is driven here, where its messages are read: notifications arrive as
    // `AsyncMessage::Notification` from `poll_message`.
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(_))) => {
                    forward.send_modify(|n| *n = n.wrapping_add(1));
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            }
        }
        let _ = done_tx.send(());
    });
    let listening = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
    if listening.is_err() {
        driver.abort();
        return false;
    }
    // Changes committed while no one listened are found by the poll this wake starts.
    tx.send_modify(|n| *n = n.wrapping_add(1));
    // Until the connection ends (the store's drop aborts this whole task).
    let _ = (&mut done_rx).await;
    drop(client);
    true
}

/// `delay` plus up to a quarter of it, so replicas that lost the database together do not
/// reconnect in step.
fn jitter(delay: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let quarter = (delay.as_millis() as u64 / 4).max(1);
    delay + Duration::from_millis(nanos % quarter)
}
