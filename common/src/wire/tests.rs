use super::*;

#[test]
fn error_messages_come_from_json_bodies_or_the_raw_text() {
    assert_eq!(
        ErrorBody::message_of(r#"{"error":"no file named \"x\""}"#),
        "no file named \"x\""
    );
    assert_eq!(ErrorBody::message_of("  plain text\n"), "plain text");
    let long = "é".repeat(400);
    let m = ErrorBody::message_of(&long);
    assert!(m.len() <= 500 && long.starts_with(&m), "{}", m.len());
}
