-- Budgets above one run: a scope's limits, their spend per period, and
-- what each model call not yet settled holds. Amounts are whole units:
-- tokens, or nano-dollars of cost, so sums are exact.
CREATE TABLE budgets (
    scope_kind TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    period TEXT NOT NULL,
    limit_value BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (scope_kind, scope_id, metric, period)
);

CREATE TABLE budget_spend (
    scope_kind TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    period TEXT NOT NULL,
    period_key TEXT NOT NULL,
    spent BIGINT NOT NULL DEFAULT 0,
    reserved BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (scope_kind, scope_id, metric, period, period_key)
);

CREATE TABLE budget_holds (
    hold_id TEXT NOT NULL,
    scope_kind TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    period TEXT NOT NULL,
    period_key TEXT NOT NULL,
    amount BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (hold_id, scope_kind, scope_id, metric, period)
);
