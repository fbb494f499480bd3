//! Medians and percentiles.

use std::time::Duration;

/// The median of `values` (the mean of the two middle ones for an even
/// count); 0 for none.
pub(crate) fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// Samples that can be asked for percentiles.
#[derive(Debug, Default, Clone)]
pub(crate) struct Samples {
    values: Vec<f64>,
    sorted: bool,
}

impl Samples {
    pub(crate) fn push(&mut self, value: f64) {
        self.values.push(value);
        self.sorted = false;
    }

    /// The `p`-th percentile (0 < p <= 100), nearest rank; 0 for none.
    pub(crate) fn percentile(&mut self, p: f64) -> f64 {
        if self.values.is_empty() {
            return 0.0;
        }
        if !self.sorted {
            self.values.sort_by(f64::total_cmp);
            self.sorted = true;
        }
        let rank = ((p / 100.0) * self.values.len() as f64).ceil() as usize;
        self.values[rank.clamp(1, self.values.len()) - 1]
    }
}

/// `duration` in milliseconds, as a float.
pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// `duration` divided by `count`, in nanoseconds.
pub(crate) fn ns_per(duration: Duration, count: usize) -> f64 {
    duration.as_secs_f64() * 1e9 / count.max(1) as f64
}
