//! The figures, as a table or as JSON lines.

use std::fmt::Write as _;

/// What a figure must be to meet its target.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target {
    AtMost(f64),
    AtLeast(f64),
}

impl Target {
    fn holds(self, value: f64) -> bool {
        match self {
            Target::AtMost(limit) => value <= limit,
            Target::AtLeast(limit) => value >= limit,
        }
    }

    fn text(self) -> String {
        match self {
            Target::AtMost(limit) => format!("<= {}", number(limit)),
            Target::AtLeast(limit) => format!(">= {}", number(limit)),
        }
    }
}

/// One measured figure on one runtime.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) figure: String,
    pub(crate) runtime: &'static str,
    pub(crate) value: f64,
    pub(crate) unit: &'static str,
    /// `None` for a figure printed for context (a floor's own value, a
    /// rho value whose target is a ratio): it always "meets".
    pub(crate) target: Option<Target>,
}

impl Row {
    pub(crate) fn meets(&self) -> bool {
        self.target.is_none_or(|target| target.holds(self.value))
    }

    /// The row as one JSON object.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "figure": self.figure,
            "runtime": self.runtime,
            "value": round(self.value),
            "unit": self.unit,
            "target": self.target.map(Target::text),
            "meets": self.meets(),
        })
    }
}

/// Collects rows; in JSON mode prints each one as it comes.
#[derive(Debug)]
pub(crate) struct Report {
    rows: Vec<Row>,
    json: bool,
}

impl Report {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            rows: Vec::new(),
            json,
        }
    }

    /// Adds a figure with a target.
    pub(crate) fn target(
        &mut self,
        runtime: &'static str,
        figure: &str,
        value: f64,
        unit: &'static str,
        target: Target,
    ) {
        self.push(Row {
            figure: figure.to_owned(),
            runtime,
            value,
            unit,
            target: Some(target),
        });
    }

    /// Adds a figure printed for context.
    pub(crate) fn info(
        &mut self,
        runtime: &'static str,
        figure: &str,
        value: f64,
        unit: &'static str,
    ) {
        self.push(Row {
            figure: figure.to_owned(),
            runtime,
            value,
            unit,
            target: None,
        });
    }

    fn push(&mut self, row: Row) {
        if self.json {
            println!("{}", row.to_json());
        }
        self.rows.push(row);
    }

    /// The value of `figure` on `runtime`, if it was measured.
    pub(crate) fn value(&self, runtime: &str, figure: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|row| row.runtime == runtime && row.figure == figure)
            .map(|row| row.value)
    }

    /// The rows whose target is missed.
    pub(crate) fn missed(&self) -> Vec<&Row> {
        self.rows.iter().filter(|row| !row.meets()).collect()
    }

    /// The readable table, figures grouped as measured, both runtimes side
    /// by side.
    pub(crate) fn table(&self) -> String {
        let mut figures: Vec<(&str, &'static str, Option<Target>)> = Vec::new();
        for row in &self.rows {
            if !figures.iter().any(|(figure, ..)| *figure == row.figure) {
                figures.push((&row.figure, row.unit, row.target));
            }
        }
        let cell = |figure: &str, runtime: &str| -> String {
            match self
                .rows
                .iter()
                .find(|row| row.figure == figure && row.runtime == runtime)
            {
                Some(row) if row.target.is_some() && !row.meets() => {
                    format!("{} MISS", number(row.value))
                }
                Some(row) if row.target.is_some() => format!("{} ok", number(row.value)),
                Some(row) => number(row.value),
                None => "-".to_owned(),
            }
        };
        let lines: Vec<[String; 5]> = figures
            .iter()
            .map(|(figure, unit, target)| {
                [
                    (*figure).to_owned(),
                    (*unit).to_owned(),
                    cell(figure, "tokio"),
                    cell(figure, "smol"),
                    target.map(Target::text).unwrap_or_default(),
                ]
            })
            .collect();
        let header = ["figure", "unit", "tokio", "smol", "target"].map(str::to_owned);
        let mut widths = [0_usize; 5];
        for line in std::iter::once(&header).chain(&lines) {
            for (width, text) in widths.iter_mut().zip(line) {
                *width = (*width).max(text.chars().count());
            }
        }
        let mut out = String::new();
        for (index, line) in std::iter::once(&header).chain(&lines).enumerate() {
            let mut text = String::new();
            for (column, (width, cell)) in widths.iter().zip(line).enumerate() {
                if (2..=3).contains(&column) {
                    let _ = write!(text, "{cell:>width$}  ");
                } else {
                    let _ = write!(text, "{cell:<width$}  ");
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
            if index == 0 {
                let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
                out.push_str(&"-".repeat(total));
                out.push('\n');
            }
        }
        out
    }
}

/// A number with about four significant digits.
fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1000.0 {
        format!("{value:.0}")
    } else if magnitude >= 100.0 {
        format!("{value:.1}")
    } else if magnitude >= 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

fn round(value: f64) -> f64 {
    (value * 1e4).round() / 1e4
}
