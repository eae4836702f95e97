//! The built-in strategies' machines: each decides over the shared run
//! core and is stepped like any [`Machine`](crate::machine::Machine). Their
//! entry points, which start them on the driver, are in
//! [`strategy`](crate::strategy).

pub(crate) mod act;
pub mod control;
pub(crate) mod llm_only;
pub mod names;
pub(crate) mod native;
pub(crate) mod plan;
pub(crate) mod react;
pub(crate) mod tool_first;
