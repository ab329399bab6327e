//! The context every check works in: the text (for positions), its name, and the
//! warnings so far.

use std::cell::RefCell;
use std::fmt::Display;
use std::ops::Range;

use toml::Spanned;

use crate::{ConfigError, ConfigWarning};

/// Where errors point: the text (for positions) and its name; and the warnings so far.
pub(crate) struct Cx<'a> {
    text: &'a str,
    origin: &'a str,
    warnings: RefCell<Vec<ConfigWarning>>,
}

impl<'a> Cx<'a> {
    pub(crate) fn new(text: &'a str, origin: &'a str) -> Self {
        Cx {
            text,
            origin,
            warnings: RefCell::new(Vec::new()),
        }
    }

    pub(crate) fn into_warnings(self) -> Vec<ConfigWarning> {
        self.warnings.into_inner()
    }

    pub(crate) fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ConfigError {
        ConfigError::at(self.origin, self.text, span, msg)
    }

    /// Record a warning at `span`; loading goes on.
    pub(crate) fn warn(&self, span: Range<usize>, msg: String) {
        let w = ConfigWarning::at(self.origin, self.text, span, msg);
        self.warnings.borrow_mut().push(w);
    }

    /// `KEY = VALUE: problem; expected EXPECTED`, at the value.
    pub(crate) fn bad<T: std::fmt::Debug>(
        &self,
        key: &str,
        v: &Spanned<T>,
        problem: impl Display,
        expected: impl Display,
    ) -> ConfigError {
        self.err(
            v.span(),
            format!("{key} = {:?}: {problem}; expected {expected}", v.get_ref()),
        )
    }
}
