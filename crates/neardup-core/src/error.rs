//! The one error type of the core. The Python layer maps each variant to a class of
//! `neardup.errors`, so the variants mirror that tree.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Error {
    /// A configuration value is out of range or unknown.
    #[error("{0}")]
    InvalidParameter(String),
    /// An input item cannot be used; `index` names it within a batch.
    #[error("{message}")]
    InvalidInput { index: Option<usize>, message: String },
    /// An allocation the input asked for was refused (Python: MemoryError), where an abort of
    /// the whole process would otherwise follow.
    #[error("{0}")]
    OutOfMemory(String),
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn param<T>(message: impl Into<String>) -> Result<T> {
    Err(Error::InvalidParameter(message.into()))
}
