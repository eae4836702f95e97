//! [`RestateError`]: what can go wrong talking to Restate.

/// An error of this crate.
#[derive(Debug, thiserror::Error)]
pub enum RestateError {
    /// A URL given for Restate (ingress, admin, this endpoint) is not a
    /// usable `http://` URL.
    #[error("invalid Restate URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why it is refused.
        reason: String,
    },
    /// Restate could not be reached.
    #[error("cannot reach Restate at {url}: {message}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// The transport's error.
        message: String,
    },
    /// Restate's admin API answered, but Restate could not reach the
    /// service endpoint being registered (it refused the connection, or
    /// gave no answer before the registration's time ran out).
    #[error(
        "Restate (admin API {admin}) cannot reach this worker's service endpoint at \
         {endpoint}: {message}"
    )]
    EndpointUnreachable {
        /// The endpoint's URL, as registered.
        endpoint: String,
        /// The admin API's URL.
        admin: String,
        /// What Restate or the transport said.
        message: String,
    },
    /// Restate answered with an error status.
    #[error("Restate refused {what} ({status}): {body}")]
    Refused {
        /// What was asked.
        what: String,
        /// The HTTP status.
        status: u16,
        /// Restate's answer, cut to 512 bytes.
        body: String,
    },
    /// The service endpoint could not listen.
    #[error("cannot listen for Restate on {address}: {message}")]
    Listen {
        /// The address asked for.
        address: String,
        /// The system's error.
        message: String,
    },
}

/// Results of this crate.
pub type RestateResult<T> = Result<T, RestateError>;
