# A sanitizer rule: it sees results, and modify sets fields of the result.
rule "redact-ssn" {
  kind   = "sanitizer"
  when   = "has(result.structuredContent) && has(result.structuredContent.ssn)"
  action = "modify"
  set    = { "structuredContent.ssn" = "'[redacted]'" }
}
