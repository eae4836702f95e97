//! `agentloop users`: the server's accounts. Create a user (its token
//! printed once), list them, reset a user's token (a new one printed, every
//! other revoked), revoke a user's tokens, delete a user. A token may
//! expire (`--expires 30d`). A revoked or expired token stops
//! authenticating at once, and the event streams and WebSockets it opened
//! on a running server close within its token check (a second).

use std::process::ExitCode;
use std::time::Duration;

use agentloop_server::users;
use agentloop_storage::model::now_millis;
use agentloop_storage::{StorageError, Store};
use clap::{Args, Subcommand};

use crate::db::{self, Access};
use crate::out::{Failure, Outcome, Stdout};
use crate::serve::DbArgs;

#[derive(Subcommand)]
pub enum UsersCommand {
    /// Create a user and print its bearer token (shown only once).
    Create(UserTokenArgs),
    /// List users: id, name, how many tokens work, when the last expires.
    List(DbArgs),
    /// Print a new token for a user; every token it had stops working
    /// (browser sessions included).
    Reset(UserTokenArgs),
    /// Revoke every token of a user (browser sessions included).
    Revoke(UserArgs),
    /// Delete a user and its tokens (refused while it owns projects).
    Delete(UserArgs),
}

#[derive(Args)]
pub struct UserTokenArgs {
    /// The user's name (unique among the users).
    pub name: String,
    /// How long the token works: a number and a unit, `s`, `m`, `h` or
    /// `d` (e.g. `90m`, `30d`). Default: until revoked.
    #[arg(long, value_parser = parse_lifetime)]
    pub expires: Option<Duration>,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args)]
pub struct UserArgs {
    /// The user's name.
    pub name: String,
    #[command(flatten)]
    pub db: DbArgs,
}

/// A token lifetime: a whole number from 1 and a unit (`s`, `m`, `h`,
/// `d`).
fn parse_lifetime(text: &str) -> Result<Duration, String> {
    const SHAPE: &str = "a number from 1 and a unit: s, m, h or d (e.g. 30d)";
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| SHAPE.to_owned())?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| SHAPE.to_owned())?;
    let unit_secs: u64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(SHAPE.to_owned()),
    };
    if number == 0 {
        return Err(SHAPE.to_owned());
    }
    number
        .checked_mul(unit_secs)
        .filter(|secs| *secs <= 100 * 365 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| "at most 100 years".to_owned())
}

/// When a token issued now with `lifetime` expires (Unix ms).
fn expiry(lifetime: Option<Duration>) -> Option<i64> {
    lifetime.map(|d| now_millis().saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)))
}

/// A failure of the store, for the terminal.
fn failed(error: StorageError) -> Failure {
    match error {
        StorageError::Invalid(reason) => Failure::usage(reason),
        other => Failure::Runtime(other.to_string()),
    }
}

/// The user named `name` in `store`; a usage error naming it when there is
/// none.
async fn named(store: &dyn Store, name: &str) -> Result<users::User, Failure> {
    users::user_named(store, name).await.map_err(|e| match e {
        StorageError::NotFound { .. } => Failure::usage(format!(
            "no user named {:?} (`agentloop users list` shows them)",
            crate::out::sanitize(name.trim())
        )),
        other => failed(other),
    })
}

/// Records an account change the operator made here in the audit log
/// (no token, only the user's id and name).
async fn audit(
    store: &dyn Store,
    action: &str,
    user: &users::User,
    expires_at: Option<i64>,
) -> Result<(), Failure> {
    let mut detail = serde_json::json!({ "name": user.name, "by": "agentloop users" });
    if let Some(at) = expires_at {
        detail["expires_at"] = serde_json::json!(agentloop_storage::time::rfc3339(at));
    }
    agentloop_server::audit::record(
        store,
        agentloop_server::audit::Action {
            action: action.to_owned(),
            target: Some(user.id.clone()),
            detail,
            ..Default::default()
        },
    )
    .await
    .map(drop)
    .map_err(|e| Failure::Runtime(format!("the audit log could not be written: {e}")))
}

/// `agentloop users create|list|reset|revoke|delete`.
pub async fn users(command: UsersCommand) -> Outcome {
    let mut out = Stdout::new();
    match command {
        UsersCommand::Create(args) => {
            let store = db::open_for_write(args.db.db.as_deref()).await?;
            let expires_at = expiry(args.expires);
            let (user, token) = users::create_user_expiring(&*store, &args.name, expires_at)
                .await
                .map_err(|e| match e {
                    StorageError::AlreadyExists { id, .. } => Failure::usage(format!(
                        "a user named {:?} already exists; user names are unique, so pick \
                             another (`agentloop users list` shows the names taken)",
                        crate::out::sanitize(&id)
                    )),
                    other => failed(other),
                })?;
            audit(&*store, "user.create", &user, expires_at).await?;
            crate::out::note(format!("created user {} ({})", user.name, user.id));
            out.line(token)?;
        }
        UsersCommand::List(args) => {
            let Some(store) = db::open(args.db.as_deref(), Access::Read).await? else {
                return Ok(ExitCode::SUCCESS);
            };
            let now = now_millis();
            for user in users::list_users(&*store)
                .await
                .map_err(|e| e.to_string())?
            {
                let live: Vec<_> = users::list_tokens(&*store, &user.id)
                    .await
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .filter(|t| t.live_at(now))
                    .collect();
                let expires = if live.is_empty() {
                    "-".to_owned()
                } else if live.iter().any(|t| t.expires_at.is_none()) {
                    "never".to_owned()
                } else {
                    live.iter()
                        .filter_map(|t| t.expires_at)
                        .max()
                        .map_or_else(|| "-".to_owned(), agentloop_storage::time::rfc3339)
                };
                out.line(format!(
                    "{}\t{}\t{}\texpires {expires}",
                    user.id,
                    crate::out::sanitize(&user.name),
                    crate::out::counted(live.len() as u64, "token", "tokens"),
                ))?;
            }
        }
        UsersCommand::Reset(args) => {
            let store = db::open_for_write(args.db.db.as_deref()).await?;
            let user = named(&*store, &args.name).await?;
            let expires_at = expiry(args.expires);
            let token = users::reset_tokens(&*store, &user.id, expires_at)
                .await
                .map_err(failed)?;
            audit(&*store, "token.reset", &user, expires_at).await?;
            crate::out::note(format!(
                "new token for {}; every token it had before is revoked",
                crate::out::sanitize(&user.name)
            ));
            out.line(token)?;
        }
        UsersCommand::Revoke(args) => {
            let store = db::open_for_write(args.db.db.as_deref()).await?;
            let user = named(&*store, &args.name).await?;
            let revoked = users::revoke_user_tokens(&*store, &user.id)
                .await
                .map_err(failed)?;
            audit(&*store, "token.revoke", &user, None).await?;
            out.line(format!(
                "user {}: {} revoked",
                crate::out::sanitize(&user.name),
                crate::out::counted(revoked, "token", "tokens")
            ))?;
        }
        UsersCommand::Delete(args) => {
            let store = db::open_for_write(args.db.db.as_deref()).await?;
            let user = named(&*store, &args.name).await?;
            users::delete_user(&*store, &user.id)
                .await
                .map_err(failed)?;
            audit(&*store, "user.delete", &user, None).await?;
            out.line(format!("user {} deleted", crate::out::sanitize(&user.name)))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lifetime_is_a_number_and_a_unit() {
        assert_eq!(parse_lifetime("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_lifetime("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_lifetime("2h"), Ok(Duration::from_secs(7200)));
        for bad in ["", "d", "30", "0m", "5w", "-1d", "1.5h", "999999999d"] {
            assert!(parse_lifetime(bad).is_err(), "{bad}");
        }
    }
}
