//! Order statistics for samples: median, p10/p90, MAD.

use serde::{Deserialize, Serialize};

/// Summary of one variant's samples for one workload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
    pub min: f64,
    pub max: f64,
}

/// Percentile `q` in [0, 1] of sorted data, linear interpolation between ranks.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            let frac = pos - lo as f64;
            sorted[lo] + (sorted[hi] - sorted[lo]) * frac
        }
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

pub fn median(values: &[f64]) -> f64 {
    percentile_sorted(&sorted(values), 0.5)
}

pub fn summarize(values: &[f64]) -> Option<Summary> {
    let s = sorted(values);
    if s.is_empty() {
        return None;
    }
    let med = percentile_sorted(&s, 0.5);
    let dev: Vec<f64> = s.iter().map(|x| (x - med).abs()).collect();
    Some(Summary {
        n: s.len(),
        median: med,
        p10: percentile_sorted(&s, 0.1),
        p90: percentile_sorted(&s, 0.9),
        mad: median(&dev),
        min: s[0],
        max: s[s.len() - 1],
    })
}

/// Ratios of paired samples (same iteration index, so the same machine noise):
/// returns (median, p10, p90) of `a[i] / b[i]`.
pub fn paired_ratio(a: &[f64], b: &[f64]) -> Option<(f64, f64, f64)> {
    let r: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(_, y)| **y > 0.0)
        .map(|(x, y)| x / y)
        .collect();
    let s = sorted(&r);
    if s.is_empty() {
        return None;
    }
    Some((
        percentile_sorted(&s, 0.5),
        percentile_sorted(&s, 0.1),
        percentile_sorted(&s, 0.9),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert!((s.p10 - 1.4).abs() < 1e-9);
        assert!((s.p90 - 4.6).abs() < 1e-9);
        assert_eq!(s.mad, 1.0);
        assert_eq!(median(&[1.0, 2.0]), 1.5);
        assert!(summarize(&[]).is_none());
    }

    #[test]
    fn paired() {
        let (m, lo, hi) = paired_ratio(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((m, lo, hi), (2.0, 2.0, 2.0));
    }
}
