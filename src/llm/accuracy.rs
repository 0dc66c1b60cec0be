//! MindIE Benchmark's accuracy mode (`--TestAccuracy`) on its two text datasets, read from
//! files the lab provides (nothing is downloaded):
//!
//! - **GSM8K**: JSONL, one `{"question", "answer"}` per line, the answer ending in
//!   `#### N`. The prompt is `Question: {question}\nAnswer:`. Scoring: exact match of the
//!   extracted final number (the number after the output's last `####`, else after its last
//!   "answer is", else its last number), compared as numbers after dropping thousands
//!   commas, a leading `$` and a trailing `.`.
//! - **MMLU, 5-shot**: the original layout, a directory with `test/{subject}_test.csv` and
//!   `dev/{subject}_dev.csv`, rows `question,A,B,C,D,answer` without a header. Each test
//!   question is asked after the subject's first five dev questions with their answers, in
//!   Hendrycks et al.'s prompt format. Scoring: the letter the output chooses (its first
//!   non-blank character when that is A–D, else the letter after its last "answer is", else
//!   its first standalone A–D).
//!
//! A request that failed counts as wrong: accuracy = correct / requests.

use std::fmt;
use std::path::Path;

use super::Error;
use super::dataset::Prompt;
use crate::load::settings::{Setting, SettingsError};

/// MMLU's few-shot count.
pub const MMLU_SHOTS: usize = 5;

/// The right answer to one item.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// GSM8K: the final number.
    Number(f64),
    /// MMLU: A, B, C or D.
    Letter(char),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Number(n) => write!(f, "{n}"),
            Answer::Letter(c) => write!(f, "{c}"),
        }
    }
}

impl Answer {
    /// What `output` answers (normalised), and whether it is this answer.
    pub fn score(&self, output: &str) -> (Option<String>, bool) {
        match self {
            Answer::Number(want) => {
                let got = final_number(output);
                let ok = got.is_some_and(|g| g == *want);
                (got.map(|g| g.to_string()), ok)
            }
            Answer::Letter(want) => {
                let got = chosen_letter(output);
                (got.map(String::from), got == Some(*want))
            }
        }
    }
}

/// One prompt with its right answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub prompt: Prompt,
    pub answer: Answer,
}

fn unreadable(path: &Path, why: String) -> Error {
    SettingsError::bad(Setting::Dataset, path.display(), why).into()
}

/// A GSM8K JSONL file.
pub fn gsm8k(path: &Path, max_tokens: u64) -> Result<Vec<Item>, Error> {
    super::dataset::jsonl_items(path, "GSM8K item", |v, bad| {
        let field = |name: &str| {
            v.get(name)
                .and_then(|s| s.as_str())
                .ok_or_else(|| bad(&format!("no \"{name}\" string (GSM8K format)")))
        };
        let (question, answer) = (field("question")?, field("answer")?);
        let want = answer
            .rsplit_once("####")
            .and_then(|(_, n)| number(n.trim()))
            .ok_or_else(|| bad("the answer does not end in '#### N' with N a number"))?;
        Ok(Item {
            prompt: Prompt {
                text: format!("Question: {question}\nAnswer:"),
                max_tokens,
                requested_input_tokens: None,
            },
            answer: Answer::Number(want),
        })
    })
}

/// One MMLU row: question, four choices, the answer letter.
type Row = (String, [String; 4], char);

fn mmlu_rows(path: &Path) -> Result<Vec<Row>, Error> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_path(path)
        .map_err(|e| unreadable(path, format!("cannot read it: {e}")))?;
    let mut out = Vec::new();
    for (k, rec) in r.records().enumerate() {
        let bad = |why: String| Error::Jsonl {
            path: path.to_path_buf(),
            line: k + 1,
            why,
        };
        let rec = rec.map_err(|e| bad(format!("not CSV: {e}")))?;
        if rec.len() != 6 {
            return Err(bad(format!(
                "{} fields; MMLU rows are question,A,B,C,D,answer",
                rec.len()
            )));
        }
        let letter = rec[5].trim();
        let answer = match letter {
            "A" | "B" | "C" | "D" => letter.chars().next().unwrap_or('A'),
            other => return Err(bad(format!("answer '{other}' is not A, B, C or D"))),
        };
        out.push((
            rec[0].to_string(),
            [1, 2, 3, 4].map(|i| rec[i].to_string()),
            answer,
        ));
    }
    Ok(out)
}

fn ask(q: &str, choices: &[String; 4]) -> String {
    format!(
        "{q}\nA. {}\nB. {}\nC. {}\nD. {}\nAnswer:",
        choices[0], choices[1], choices[2], choices[3]
    )
}

/// An MMLU directory (`test/*_test.csv`, `dev/*_dev.csv`), subjects in name order.
pub fn mmlu(dir: &Path, max_tokens: u64) -> Result<Vec<Item>, Error> {
    let test = dir.join("test");
    let entries = std::fs::read_dir(&test).map_err(|e| {
        unreadable(
            dir,
            format!("cannot read its test/ folder ({e}); an MMLU directory holds test/SUBJECT_test.csv and dev/SUBJECT_dev.csv"),
        )
    })?;
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with("_test.csv"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        let subject = name.trim_end_matches("_test.csv").to_string();
        let dev_path = dir.join("dev").join(format!("{subject}_dev.csv"));
        if !dev_path.is_file() {
            return Err(unreadable(
                &dev_path,
                format!("missing: the {MMLU_SHOTS}-shot examples of subject '{subject}'"),
            ));
        }
        let dev = mmlu_rows(&dev_path)?;
        if dev.len() < MMLU_SHOTS {
            return Err(unreadable(
                &dev_path,
                format!(
                    "holds {} rows; {MMLU_SHOTS}-shot prompts need {MMLU_SHOTS}",
                    dev.len()
                ),
            ));
        }
        let mut head = format!(
            "The following are multiple choice questions (with answers) about {}.\n\n",
            subject.replace('_', " ")
        );
        for (q, c, a) in &dev[..MMLU_SHOTS] {
            head.push_str(&format!("{} {a}\n\n", ask(q, c)));
        }
        for (q, c, a) in mmlu_rows(&f)? {
            out.push(Item {
                prompt: Prompt {
                    text: format!("{head}{}", ask(&q, &c)),
                    max_tokens,
                    requested_input_tokens: None,
                },
                answer: Answer::Letter(a),
            });
        }
    }
    if out.is_empty() {
        return Err(unreadable(dir, "holds no MMLU test question".into()));
    }
    Ok(out)
}

/// A number as written in GSM8K: `1,234`, `$5`, `-3.5`, `7.`.
fn number(s: &str) -> Option<f64> {
    let t: String = s
        .trim()
        .trim_start_matches('$')
        .trim_end_matches('.')
        .chars()
        .filter(|&c| c != ',')
        .collect();
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Every number in `s`, in order (digits with commas and one decimal point, a leading
/// minus sign kept).
fn numbers(s: &str) -> Vec<f64> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let neg = i > 0 && b[i - 1] == b'-';
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || (matches!(b[i], b',' | b'.')
                        && i + 1 < b.len()
                        && b[i + 1].is_ascii_digit()))
            {
                i += 1;
            }
            if let Some(x) = number(&s[start..i]) {
                out.push(if neg { -x } else { x });
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The final number a GSM8K answer gives.
pub fn final_number(output: &str) -> Option<f64> {
    let lower = output.to_ascii_lowercase();
    for marker in ["####", "answer is"] {
        if let Some(x) = lower
            .rfind(marker)
            .and_then(|k| numbers(&output[k + marker.len()..]).first().copied())
        {
            return Some(x);
        }
    }
    numbers(output).last().copied()
}

/// The letter an MMLU answer chooses.
pub fn chosen_letter(output: &str) -> Option<char> {
    let is_choice = |c: char| matches!(c, 'A'..='D');
    let first = output
        .trim_start()
        .trim_start_matches(['(', '[', '*'])
        .chars()
        .next();
    let standalone = |i: usize, c: char| {
        let b = output.as_bytes();
        is_choice(c)
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
            && (i + 1 >= b.len() || !b[i + 1].is_ascii_alphanumeric())
    };
    if let Some(c) = first.filter(|&c| is_choice(c)) {
        let rest = output.trim_start().trim_start_matches(['(', '[', '*']);
        if rest.len() == 1 || !rest.as_bytes()[1].is_ascii_alphanumeric() {
            return Some(c);
        }
    }
    if let Some(k) = output.to_ascii_lowercase().rfind("answer is") {
        let off = k + "answer is".len();
        let after = output[off..]
            .char_indices()
            .find(|&(i, c)| standalone(off + i, c));
        if let Some((_, c)) = after {
            return Some(c);
        }
    }
    output
        .char_indices()
        .find(|&(i, c)| standalone(i, c))
        .map(|(_, c)| c)
}

/// The accuracy of a run: right answers among the requests.
pub fn summary(correct: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| correct as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_number_is_found_as_gsm8k_writes_it() {
        assert_eq!(final_number("3 + 4 = 7 apples.\n#### 7"), Some(7.0));
        assert_eq!(final_number("So 1,200 - 5 = $1,195."), Some(1195.0));
        assert_eq!(final_number("The answer is -3.5, not 2"), Some(-3.5));
        assert_eq!(
            final_number("#### 18\n\nQuestion: what is 2 + 9"),
            Some(18.0)
        );
        assert_eq!(final_number("no idea"), None);
        let a = Answer::Number(1195.0);
        assert_eq!(a.score("so $1,195."), (Some("1195".into()), true));
        assert!(!a.score("1194").1);
    }

    #[test]
    fn the_chosen_letter_is_read_as_mmlu_scores_it() {
        assert_eq!(chosen_letter(" B"), Some('B'));
        assert_eq!(chosen_letter("(C) because"), Some('C'));
        assert_eq!(chosen_letter("Because of X, the answer is D."), Some('D'));
        assert_eq!(chosen_letter("After thinking: A"), Some('A'));
        assert_eq!(chosen_letter("All of them"), None);
        assert_eq!(chosen_letter("Definitely"), None);
        let a = Answer::Letter('B');
        assert_eq!(a.score(" B\n"), (Some("B".into()), true));
        assert!(!a.score(" C").1);
    }

    #[test]
    fn mmlu_prompts_are_five_shot_in_hendrycks_format() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm/mmlu_sample");
        let items = mmlu(&dir, 4).unwrap();
        assert_eq!(items.len(), 6);
        let p = &items[0].prompt.text;
        assert!(p.starts_with(
            "The following are multiple choice questions (with answers) about arithmetic.\n\nWhat is 2 + 3?\nA. 4\nB. 5\nC. 6\nD. 7\nAnswer: B\n\n"
        ), "{p}");
        assert_eq!(p.matches("\nAnswer:").count(), MMLU_SHOTS + 1);
        assert!(
            p.ends_with("What is 6 + 6?\nA. 66\nB. 10\nC. 12\nD. 36\nAnswer:"),
            "{p}"
        );
        assert_eq!(items[0].answer, Answer::Letter('C'));
        assert_eq!(items[0].prompt.max_tokens, 4);
        assert!(items[2].prompt.text.contains("about electric power."));
        let g = gsm8k(&dir.with_file_name("gsm8k_sample.jsonl"), 64).unwrap();
        assert_eq!(g[2].answer, Answer::Number(1195.0));
        assert!(
            g[0].prompt.text.starts_with("Question: A substation")
                && g[0].prompt.text.ends_with("\nAnswer:")
        );
    }

    #[test]
    fn bad_files_name_the_line_and_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("g.jsonl");
        std::fs::write(&p, "{\"question\":\"q\",\"answer\":\"12\"}\n").unwrap();
        let e = gsm8k(&p, 8).unwrap_err().to_string();
        assert!(
            e.contains("g.jsonl:1: the answer does not end in '#### N'"),
            "{e}"
        );
        std::fs::create_dir_all(d.path().join("m/test")).unwrap();
        std::fs::write(d.path().join("m/test/x_test.csv"), "q,1,2,3,4,B\n").unwrap();
        let e = mmlu(&d.path().join("m"), 8).unwrap_err().to_string();
        assert!(e.contains("x_dev.csv") && e.contains("5-shot"), "{e}");
        std::fs::create_dir_all(d.path().join("m/dev")).unwrap();
        std::fs::write(d.path().join("m/dev/x_dev.csv"), "q,1,2,3,4,E\n".repeat(5)).unwrap();
        let e = mmlu(&d.path().join("m"), 8).unwrap_err().to_string();
        assert!(
            e.contains("x_dev.csv:1: answer 'E' is not A, B, C or D"),
            "{e}"
        );
    }
}
