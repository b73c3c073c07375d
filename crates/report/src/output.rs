//! Where output goes and how it looks, decided once per process and shared by every
//! command: whether stdout and stderr are terminals, whether this is CI, whether colour is
//! wanted, and so whether a progress bar is drawn. [`Output::from_env`] is the one place
//! these are read from the process; everything else is handed an [`Output`] (as nextest
//! hands its reporter `is_terminal` and `is_ci`), so every output choice can be tested.
//!
//! Styles are [`anstyle`] styles (the crate clap already uses), written with [`paint`];
//! progress bars come from [`progress_bar`] and are drawn on stderr only on a terminal
//! outside CI.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::IsTerminal;

use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// When to colour the terminal output (the command line's `--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set.
    Auto,
    Always,
    Never,
}

/// What a command knows about where it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// Stdout is a terminal.
    pub is_terminal: bool,
    /// Stderr is a terminal (where progress bars go).
    pub stderr_is_terminal: bool,
    /// The `CI` environment variable is set and not empty.
    pub is_ci: bool,
    /// The `NO_COLOR` environment variable is set and not empty.
    pub no_color: bool,
}

impl Output {
    /// Reads the process's terminals and environment, once.
    pub fn from_env() -> Output {
        Output {
            is_terminal: std::io::stdout().is_terminal(),
            stderr_is_terminal: std::io::stderr().is_terminal(),
            is_ci: set(std::env::var_os("CI")),
            no_color: set(std::env::var_os("NO_COLOR")),
        }
    }

    /// Whether stdout is coloured under `choice`.
    pub fn color(&self, choice: ColorChoice) -> bool {
        match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => self.is_terminal && !self.no_color,
        }
    }

    /// Whether a progress bar is drawn: on a terminal's stderr, outside CI.
    pub fn show_progress(&self) -> bool {
        self.stderr_is_terminal && !self.is_ci
    }
}

/// Whether a flag-like environment variable is on. Set to the empty string counts as not
/// set, as no-color.org says for `NO_COLOR`; `CI` is read the same way.
pub fn set(value: Option<OsString>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

/// The styles the terminal views use.
pub mod style {
    use super::*;

    pub const BOLD: Style = Style::new().bold();
    pub const DIM: Style = Style::new().dimmed();
    pub const GREEN: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Green)));
    pub const YELLOW: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Yellow)));
    pub const RED: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Red)));
    pub const CYAN: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Cyan)));
    /// A failure: a verdict against the target.
    pub const FAIL: Style = RED.bold();
    /// An error: the target broke, so there is no verdict.
    pub const ERROR: Style = Style::new()
        .bold()
        .fg_color(Some(anstyle::Color::Ansi(AnsiColor::Magenta)));
}

/// `text` in `style` when `on`, plain otherwise.
pub fn paint(on: bool, style: Style, text: &str) -> String {
    if on {
        format!("{}{text}{}", style.render(), style.render_reset())
    } else {
        text.to_string()
    }
}

/// A progress bar on stderr of `len` steps drawn with `template` (an indicatif template),
/// or `None` when `output` says none is drawn.
pub fn progress_bar(output: &Output, len: u64, template: &str) -> Option<ProgressBar> {
    if !output.show_progress() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

/// \[Markdown\] A titled list of bullets and a blank line after it, or nothing when there are none.
pub fn bullets(out: &mut String, title: &str, items: &[String]) {
    if !items.is_empty() {
        let _ = writeln!(out, "{title}\n");
        let _ = writeln!(out, "{}\n", items.join("\n"));
    }
}

/// \[Markdown\] Escapes text for a table cell (the Markdown reporter's and fuzz's).
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(is_terminal: bool, is_ci: bool, no_color: bool) -> Output {
        Output {
            is_terminal,
            stderr_is_terminal: is_terminal,
            is_ci,
            no_color,
        }
    }

    #[test]
    fn color_follows_the_flag_the_terminal_and_no_color() {
        assert!(output(true, false, false).color(ColorChoice::Auto));
        assert!(!output(false, false, false).color(ColorChoice::Auto));
        assert!(!output(true, false, true).color(ColorChoice::Auto));
        assert!(output(false, false, true).color(ColorChoice::Always));
        assert!(!output(true, false, false).color(ColorChoice::Never));
    }

    #[test]
    fn progress_only_on_a_terminal_outside_ci() {
        assert!(output(true, false, false).show_progress());
        assert!(!output(true, true, false).show_progress());
        assert!(!output(false, false, false).show_progress());
        assert!(progress_bar(&output(false, false, false), 3, "{bar}").is_none());
    }

    #[test]
    fn an_empty_variable_is_not_set() {
        assert!(!set(None));
        assert!(!set(Some(OsString::new())));
        assert!(set(Some("true".into())));
        assert!(set(Some("0".into())));
    }

    #[test]
    fn paint_wraps_only_when_on() {
        assert_eq!(paint(false, style::RED, "x"), "x");
        let on = paint(true, style::GREEN, "clean");
        assert!(on.starts_with("\x1b[") && on.contains("clean") && on.ends_with("\x1b[0m"));
    }
}
