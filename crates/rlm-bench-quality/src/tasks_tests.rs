use super::*;

/// A haystack with digits and full stops in it, like real essays.
fn essays() -> String {
    let mut text = String::new();
    for index in 0..400 {
        text.push_str(&format!(
            "Essay {index} began in 19{:02}. It had a point, and then another one.\n",
            index % 100
        ));
    }
    text
}

fn spec(kind: TaskKind, size: usize, depth: Option<u8>) -> TaskSpec {
    TaskSpec {
        kind,
        size,
        depth,
        repetition: 0,
    }
}

#[test]
fn the_same_seed_gives_the_same_tasks_and_another_seed_others() {
    let haystack = essays();
    for task in [
        spec(TaskKind::Needle, 8_000, Some(50)),
        spec(TaskKind::Count, 8_000, None),
    ] {
        let first = task.generate(7, &haystack);
        let again = task.generate(7, &haystack);
        let other = task.generate(8, &haystack);
        assert_eq!(first.context, again.context);
        assert_eq!(first.question, again.question);
        assert_eq!(first.truth, again.truth);
        assert_ne!(first.context, other.context, "{task:?}");
    }
    let repeated = TaskSpec {
        repetition: 1,
        ..spec(TaskKind::Needle, 8_000, Some(50))
    };
    assert_ne!(
        repeated.generate(7, &haystack).truth,
        spec(TaskKind::Needle, 8_000, Some(50))
            .generate(7, &haystack)
            .truth,
        "each repetition has its own needle"
    );
}

#[test]
fn the_needle_is_there_once_at_its_depth_and_the_context_has_its_size() {
    let haystack = essays();
    for seed in 0..20 {
        for depth in [0, 10, 50, 90, 100] {
            for size in [1_000, 8_000, 64_000] {
                let task = spec(TaskKind::Needle, size, Some(depth)).generate(seed, &haystack);
                let Truth::Code(code) = &task.truth else {
                    panic!("a needle task scores a code")
                };
                assert_eq!(code.len(), 6);
                assert_eq!(task.context.chars().count(), size);
                assert_eq!(task.context.matches("launch code for project").count(), 1);
                assert_eq!(task.context.matches(code.as_str()).count(), 1, "{seed}");
                let project = task
                    .question
                    .split("project ")
                    .nth(1)
                    .and_then(|rest| rest.strip_suffix("? Answer with the number."))
                    .unwrap();
                let sentence = format!("The secret launch code for project {project} is {code}.");
                let at = task.context.find(&sentence).expect("the whole needle");
                // As the needle-in-a-haystack test defines it: the share of the haystack
                // (the context without the needle) that comes before the needle.
                let haystack_chars = size - sentence.len() - 2;
                let found = at.saturating_sub(1) as f64 / haystack_chars as f64;
                let wanted = f64::from(depth) / 100.0;
                assert!(
                    found <= wanted + 0.001 && found >= wanted - 0.03,
                    "depth {depth}, size {size}: needle at {found:.3}"
                );
            }
        }
    }
}

#[test]
fn a_count_task_counts_the_lines_with_its_label() {
    let haystack = essays();
    for seed in 0..20 {
        for size in [1_000, 20_000] {
            let task = spec(TaskKind::Count, size, None).generate(seed, &haystack);
            let label = task.label.unwrap();
            assert!(task.question.contains(&format!("\"{label}\"")));
            assert!(task.context.chars().count() <= size);
            assert!(task.context.chars().count() > size - 200, "filled");
            let lines: Vec<&str> = task.context.lines().collect();
            let labels: Vec<&str> = lines
                .iter()
                .map(|line| {
                    let fields: Vec<&str> = line.split(" | ").collect();
                    assert_eq!(fields.len(), 3, "{line}");
                    fields[1].strip_prefix("label=").unwrap()
                })
                .collect();
            let actual = labels.iter().filter(|l| **l == label).count() as u64;
            assert_eq!(task.truth, Truth::Count(actual));
            let distinct: std::collections::BTreeSet<_> = labels.iter().collect();
            assert!(distinct.len() > 1, "several categories");
        }
    }
}

#[test]
fn counts_score_three_quarters_to_the_power_of_the_error() {
    let truth = Truth::Count(40);
    assert_eq!(truth.score("40"), 1.0);
    assert_eq!(truth.score("There are 41 such lines."), 0.75);
    assert_eq!(truth.score("39"), 0.75);
    assert!((truth.score("43") - 0.75f64.powi(3)).abs() < 1e-12);
    assert_eq!(truth.score("no idea"), 0.0);
    assert_eq!(truth.score(""), 0.0);
    assert!(truth.score("4000000000000000000000000000000000000000000000") < 1e-300);
    assert_eq!(Truth::Count(1234).score("1,234 lines"), 1.0);
    assert_eq!(Truth::Count(0).score("-1"), 0.75);
    assert_eq!(count_score(10, 5), 0.75f64.powi(5));
}

#[test]
fn the_first_integer_is_parsed_with_groups_and_sign() {
    assert_eq!(first_integer("answer: 17 of 20"), Some(17));
    assert_eq!(first_integer("12,345 and more"), Some(12_345));
    assert_eq!(first_integer("12_345"), Some(12_345));
    assert_eq!(first_integer("1,23"), Some(1), "not a group of three");
    assert_eq!(first_integer("7, 8"), Some(7));
    assert_eq!(first_integer("1,2345"), Some(1));
    assert_eq!(first_integer("minus -5"), Some(-5));
    assert_eq!(first_integer("x"), None);
    assert_eq!(first_integer("3.9"), Some(3));
}

/// A small model that echoes the prompt's `[Context available in context_0]` has not given
/// a count: digits inside a word are not a number.
#[test]
fn digits_inside_a_word_are_not_a_number() {
    assert_eq!(first_integer("[Context available in context_0]"), None);
    assert_eq!(first_integer("see context_0, then 12 lines"), Some(12));
    assert_eq!(first_integer("v2 has 7"), Some(7));
    assert_eq!(first_integer("the 3rd of 9"), Some(9));
    assert_eq!(first_integer("(42)"), Some(42));
    assert_eq!(
        Truth::Count(10).score("[Context available in context_0]"),
        0.0
    );
}

#[test]
fn a_needle_scores_when_its_code_is_a_whole_number_in_the_answer() {
    let truth = Truth::Code("482913".into());
    assert_eq!(truth.score("The code is 482913."), 1.0);
    assert_eq!(truth.score("482913"), 1.0);
    assert_eq!(truth.score("4829130"), 0.0);
    assert_eq!(truth.score("1482913"), 0.0);
    assert_eq!(truth.score("482 913"), 0.0);
    assert_eq!(truth.score("I could not find it"), 0.0);
}

#[test]
fn the_plan_covers_kinds_sizes_depths_and_repetitions_once() {
    let specs = plan(
        &[TaskKind::Needle, TaskKind::Count, TaskKind::Needle],
        &[1_000, 2_000],
        &[10, 90],
        2,
    );
    // needle: 2 sizes × 2 depths × 2; count: 2 sizes × 2.
    assert_eq!(specs.len(), 12);
    assert_eq!(specs[0].depth, Some(10));
    assert_eq!(specs[8].kind, TaskKind::Count);
    assert_eq!(specs[8].depth, None);
    assert_eq!(specs[11].size, 2_000);
    assert_eq!(specs[11].repetition, 1);
}

#[test]
fn a_task_does_not_depend_on_the_other_tasks_of_the_plan() {
    let haystack = essays();
    let alone = plan(&[TaskKind::Count], &[8_000], &[50], 1);
    let both = plan(&[TaskKind::Needle, TaskKind::Count], &[8_000], &[50], 1);
    assert_eq!(
        alone[0].generate(3, &haystack).context,
        both[1].generate(3, &haystack).context
    );
}
