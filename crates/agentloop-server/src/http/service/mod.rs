//! The API's use cases, one function each: what REST, MCP, A2A and AG-UI
//! all call. A use case takes the authenticated user and typed input
//! (see [`super::requests`]), checks that the user owns what it names
//! (another user's project, task or run is "not found", as an unknown
//! one), asks the store and the run lifecycle, and answers records;
//! handlers shape those for their protocol.
//!
//! Nothing here calls a handler, and no handler asks the store.

mod audit;
mod budgets;
mod memories;
mod owned;
mod projects;
mod runs;
mod schedules;
mod session;
mod submit;
mod tasks;
mod webhooks;

pub use audit::*;
pub use budgets::*;
pub use memories::*;
pub use owned::*;
pub use projects::*;
pub use runs::*;
pub use schedules::*;
pub use session::*;
pub use submit::*;
pub use tasks::*;
pub use webhooks::*;
