//! Conversions that let the builder take providers and tools as they come
//! (a value, an `Arc` of it, an `Arc<dyn _>`, a typed tool) without casts.
//!
//! Each conversion trait carries a marker type parameter naming which kind
//! of value it converts. The markers keep the impls from overlapping (a
//! blanket impl over `T: Tool` and one over `T: TypedTool` would otherwise
//! conflict), and type inference picks the one impl whose bounds hold.

use std::sync::Arc;

use agentloop_types::{ModelProvider, Tool};

/// Something the builder can use as the model provider.
pub trait IntoProvider<Marker> {
    /// The provider, shared.
    fn into_provider(self) -> Arc<dyn ModelProvider>;
}

/// Something the builder can offer the model as a tool.
pub trait IntoTool<Marker> {
    /// The tool, shared.
    fn into_tool(self) -> Arc<dyn Tool>;
}

/// Markers of [`IntoProvider`] and [`IntoTool`] impls; never named by users.
#[doc(hidden)]
pub mod marker {
    /// A value implementing the port trait.
    pub enum Value {}
    /// An `Arc` of a sized value implementing the port trait.
    pub enum Shared {}
    /// An `Arc` of the trait object.
    pub enum Dyn {}
    /// A `TypedTool`.
    #[cfg(feature = "tools")]
    pub enum Typed {}
}

impl<P: ModelProvider + 'static> IntoProvider<marker::Value> for P {
    fn into_provider(self) -> Arc<dyn ModelProvider> {
        Arc::new(self)
    }
}

impl<P: ModelProvider + 'static> IntoProvider<marker::Shared> for Arc<P> {
    fn into_provider(self) -> Arc<dyn ModelProvider> {
        self
    }
}

impl IntoProvider<marker::Dyn> for Arc<dyn ModelProvider> {
    fn into_provider(self) -> Arc<dyn ModelProvider> {
        self
    }
}

impl<T: Tool + 'static> IntoTool<marker::Value> for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

impl<T: Tool + 'static> IntoTool<marker::Shared> for Arc<T> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

impl IntoTool<marker::Dyn> for Arc<dyn Tool> {
    fn into_tool(self) -> Arc<dyn Tool> {
        self
    }
}

#[cfg(feature = "tools")]
impl<T: crate::TypedTool> IntoTool<marker::Typed> for T {
    fn into_tool(self) -> Arc<dyn Tool> {
        Arc::new(crate::Typed(self))
    }
}
