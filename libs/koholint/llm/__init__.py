"""The language models behind the llm-d gateway (or anything speaking its contract): the
route names, defined once (``koholint.llm.client.ROUTES``), and the validating client that
the planner's backends and the evaluator's judges both call."""
