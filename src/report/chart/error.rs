//! The chart floor's error: a chart that could not be drawn.

/// A chart that could not be drawn or rasterised. Every input reaching
/// the chart code is already checked, so this is a bug in ratelab:
/// [`From<DrawError> for Error`](crate::error::Error) makes it an
/// internal error (exit 3). The text is the drawing library's own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrawError {
    /// plotters could not draw or lay out text (its backend's message).
    #[error("{0}")]
    Plot(String),
    /// The SVG did not parse back, or the canvas size is not one resvg
    /// can allocate.
    #[error("{0}")]
    Raster(String),
}

impl DrawError {
    /// A plotters error.
    pub(crate) fn plot(e: impl std::fmt::Display) -> Self {
        DrawError::Plot(e.to_string())
    }
}

impl From<DrawError> for crate::error::Error {
    /// An internal error (exit 3).
    fn from(e: DrawError) -> Self {
        crate::error::Error::internal(e.to_string())
    }
}
