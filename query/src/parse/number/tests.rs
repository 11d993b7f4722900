use proptest::prelude::*;

use super::*;

/// Texts shaped like number literals (and near misses), to compare with `str::parse`.
fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        // Plain decimals, few or many digits on either side.
        ("[0-9]{1,20}", proptest::option::of("[0-9]{0,26}")).prop_map(|(int, frac)| match frac {
            Some(f) => format!("{int}.{f}"),
            None => int,
        }),
        // Shortest round-trip texts of doubles and floats: what generated scripts hold.
        any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(|v| format!("{}", v.abs())),
        any::<f32>().prop_filter("finite", |v| v.is_finite()).prop_map(|v| format!("{}", v.abs())),
        // Exponents, signs, stray characters, empty text.
        "[0-9.eE+\\-_a]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn floats_are_parsed_as_str_parse_does(text in number_text()) {
        let expected = text.parse::<f64>().ok().map(f64::to_bits);
        prop_assert_eq!(parse_f64(&text).map(f64::to_bits), expected);
    }

    #[test]
    fn ints_are_parsed_as_str_parse_does(text in prop_oneof!["[0-9]{0,22}", "[0-9+\\-a]{0,4}", any::<u64>().prop_map(|v| v.to_string())]) {
        prop_assert_eq!(parse_u64(&text), text.parse::<u64>().ok());
    }
}

#[test]
fn edges_of_the_fast_path() {
    for text in [
        "9007199254740992",   // 2^53: exact
        "9007199254740993",   // 2^53 + 1: rounds
        "9007199254740993.0", // the same, through the point
        "0.0000000000000000000001",
        "0.00000000000000000000001", // 23 digits after the point
        "1.7976931348623157e308",
        "1e400",
        "0.1",
        "123.25",
        "0",
        "0.",
        ".5",
        ".",
        "",
        "1..2",
    ] {
        assert_eq!(parse_f64(text).map(f64::to_bits), text.parse::<f64>().ok().map(f64::to_bits), "{text}");
    }
    for text in ["18446744073709551615", "18446744073709551616", "0", "", "+1", "-1", "007"] {
        assert_eq!(parse_u64(text), text.parse::<u64>().ok(), "{text}");
    }
}

#[test]
fn literal_values_and_range_errors() {
    assert_eq!(number_value("9223372036854775808", true, true), Some(Literal::Int(i64::MIN)));
    assert_eq!(number_value("9223372036854775808", true, false), None);
    assert_eq!(
        number_value("0.0", false, true).map(|l| matches!(l, Literal::Float(f) if f.is_sign_negative())),
        Some(true)
    );
    let err = number_literal("99999999999999999999", true, true, Span::new(0, 21)).unwrap_err();
    assert_eq!(
        err.message,
        "integer -99999999999999999999 is out of range (int is 64-bit: -9223372036854775808 to 9223372036854775807)"
    );
}
