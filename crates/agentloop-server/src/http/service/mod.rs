//! The API's use cases, one function each: what REST, MCP, A2A and AG-UI
//! all call. A use case takes the authenticated user and typed input
//! (see [`super::requests`]), checks that the user is a member of the
//! project it names with the role it needs (`owned`: a project,
//! task or run of a project the user is no member of is "not found", as
//! an unknown one; a lesser role is a 403), asks the store and the run lifecycle, and answers records;
//! handlers shape those for their protocol.
//!
//! Nothing here calls a handler, and no handler asks the store.

mod audit;
mod budgets;
mod inspect;
mod members;
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
pub use inspect::*;
pub use members::*;
pub use memories::*;
pub use owned::*;
pub use projects::*;
pub use runs::*;
pub use schedules::*;
pub use session::*;
pub use submit::*;
pub use tasks::*;
pub use webhooks::*;
