//! Budgets: limits per scope and period, reservations that all hold or
//! none does, settling, periods starting again, and reservations racing
//! one budget that never take it past its limit.

use std::sync::Arc;

use agentloop_storage::budgets::{
    BudgetLimit, BudgetMetric, BudgetPeriod, BudgetScope, BudgetScopeKind, Reservation,
};
use agentloop_storage::{StorageError, Store};
use agentloop_types::Spend;

/// 2026-11-29T12:00:00Z.
const NOW: i64 = 1_795_953_600_000;
const DAY_MS: i64 = 86_400_000;

fn limit(metric: BudgetMetric, period: BudgetPeriod, limit: f64) -> BudgetLimit {
    BudgetLimit {
        metric,
        period,
        limit,
    }
}

fn spend(tokens: u64, cost: f64) -> Spend {
    Spend { tokens, cost }
}

pub async fn budgets_reserve_settle_and_roll_over(store: Arc<dyn Store>) {
    let user = BudgetScope::new(BudgetScopeKind::User, "u1");
    let project = BudgetScope::new(BudgetScopeKind::Project, "p1");
    let task = BudgetScope::new(BudgetScopeKind::Task, "t1");
    let scopes = [user.clone(), project.clone(), task.clone()];

    // No budget: everything is reserved, nothing is written.
    assert_eq!(
        store
            .reserve_budgets("h0", &scopes, spend(10, 1.0), NOW, 0)
            .await
            .unwrap(),
        Reservation::NoBudget
    );
    store.settle_budgets("h0", spend(10, 1.0)).await.unwrap();

    // Bad input is refused and nothing is stored.
    for bad in [
        vec![limit(BudgetMetric::Cost, BudgetPeriod::Day, -1.0)],
        vec![limit(BudgetMetric::Cost, BudgetPeriod::Day, f64::NAN)],
        vec![
            limit(BudgetMetric::Cost, BudgetPeriod::Day, 1.0),
            limit(BudgetMetric::Cost, BudgetPeriod::Day, 2.0),
        ],
    ] {
        let refused = store.set_budgets(&project, &bad, NOW).await;
        assert!(
            matches!(refused, Err(StorageError::Invalid(_))),
            "{refused:?}"
        );
    }
    assert!(store.budgets(&project, NOW).await.unwrap().is_empty());

    store
        .set_budgets(
            &project,
            &[
                limit(BudgetMetric::Tokens, BudgetPeriod::Total, 1000.0),
                limit(BudgetMetric::Cost, BudgetPeriod::Day, 1.0),
            ],
            NOW,
        )
        .await
        .unwrap();
    store
        .set_budgets(
            &user,
            &[limit(BudgetMetric::Cost, BudgetPeriod::Month, 1.5)],
            NOW,
        )
        .await
        .unwrap();

    let listed = store.budgets(&project, NOW).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].limit.metric, BudgetMetric::Cost);
    assert_eq!(listed[0].period_key, "2026-11-29");
    assert_eq!(listed[1].limit.metric, BudgetMetric::Tokens);
    assert_eq!(listed[1].period_key, "total");
    assert!(listed.iter().all(|u| u.spent == 0.0 && u.reserved == 0.0));

    // A hold counts against every budget of every scope.
    assert_eq!(
        store
            .reserve_budgets("h1", &scopes, spend(400, 0.6), NOW, 0)
            .await
            .unwrap(),
        Reservation::Reserved
    );
    let listed = store.budgets(&project, NOW).await.unwrap();
    assert_eq!(listed[0].reserved, 0.6);
    assert_eq!(listed[1].reserved, 400.0);
    assert_eq!(store.budgets(&user, NOW).await.unwrap()[0].reserved, 0.6);

    // One budget over its limit refuses the whole reservation: none holds
    // anything of it.
    let refused = store
        .reserve_budgets("h2", &scopes, spend(100, 0.5), NOW, 0)
        .await
        .unwrap();
    assert_eq!(
        refused,
        Reservation::Refused {
            scope: project.clone(),
            limit: limit(BudgetMetric::Cost, BudgetPeriod::Day, 1.0),
        }
    );
    let listed = store.budgets(&project, NOW).await.unwrap();
    assert_eq!(listed[1].reserved, 400.0);
    assert_eq!(store.budgets(&user, NOW).await.unwrap()[0].reserved, 0.6);
    // Settling a refused hold changes nothing.
    store.settle_budgets("h2", spend(100, 0.5)).await.unwrap();

    // Settling moves the hold to what was spent.
    store.settle_budgets("h1", spend(300, 0.25)).await.unwrap();
    let listed = store.budgets(&project, NOW).await.unwrap();
    assert_eq!((listed[0].spent, listed[0].reserved), (0.25, 0.0));
    assert_eq!((listed[1].spent, listed[1].reserved), (300.0, 0.0));
    // Settled once only.
    store.settle_budgets("h1", spend(300, 0.25)).await.unwrap();
    assert_eq!(store.budgets(&project, NOW).await.unwrap()[0].spent, 0.25);

    // Within the day's cost and the total's tokens.
    assert_eq!(
        store
            .reserve_budgets("h3", &scopes, spend(700, 0.75), NOW, 0)
            .await
            .unwrap(),
        Reservation::Reserved
    );
    store.settle_budgets("h3", spend(700, 0.75)).await.unwrap();
    // The day is spent; the next day starts from nothing, but the total's
    // tokens are spent for good, and the user's month too.
    let next_day = NOW + DAY_MS;
    let refused = store
        .reserve_budgets("h4", &scopes[1..], spend(1, 0.1), NOW, 0)
        .await
        .unwrap();
    assert!(
        matches!(refused, Reservation::Refused { .. }),
        "{refused:?}"
    );
    let refused = store
        .reserve_budgets("h5", &scopes[1..], spend(1, 0.1), next_day, 0)
        .await
        .unwrap();
    assert_eq!(
        refused,
        Reservation::Refused {
            scope: project.clone(),
            limit: limit(BudgetMetric::Tokens, BudgetPeriod::Total, 1000.0),
        }
    );
    let listed = store.budgets(&project, next_day).await.unwrap();
    assert_eq!(
        (listed[0].period_key.as_str(), listed[0].spent),
        ("2026-11-30", 0.0)
    );
    assert_eq!(listed[1].spent, 1000.0);
    let refused = store
        .reserve_budgets(
            "h6",
            std::slice::from_ref(&user),
            spend(0, 0.6),
            next_day,
            0,
        )
        .await
        .unwrap();
    assert!(matches!(refused, Reservation::Refused { scope, .. } if scope == user));

    // Replacing a scope's budgets keeps what was spent; none left: no
    // budget refuses.
    store
        .set_budgets(
            &project,
            &[limit(BudgetMetric::Tokens, BudgetPeriod::Total, 2000.0)],
            next_day,
        )
        .await
        .unwrap();
    let listed = store.budgets(&project, next_day).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].spent, 1000.0);
    store.set_budgets(&project, &[], next_day).await.unwrap();
    assert!(store.budgets(&project, next_day).await.unwrap().is_empty());
    assert_eq!(
        store
            .reserve_budgets("h7", &[project, task], spend(5000, 9.0), next_day, 0)
            .await
            .unwrap(),
        Reservation::NoBudget
    );
}

/// Reservations racing one budget.
const RACERS: usize = 50;

pub async fn concurrent_reservations_never_overspend(store: Arc<dyn Store>) {
    let project = BudgetScope::new(BudgetScopeKind::Project, "p1");
    let user = BudgetScope::new(BudgetScopeKind::User, "u1");
    // Room for ten calls' estimates.
    store
        .set_budgets(
            &project,
            &[limit(BudgetMetric::Cost, BudgetPeriod::Total, 1.0)],
            NOW,
        )
        .await
        .unwrap();
    store
        .set_budgets(
            &user,
            &[limit(
                BudgetMetric::Tokens,
                BudgetPeriod::Month,
                1_000_000.0,
            )],
            NOW,
        )
        .await
        .unwrap();
    let estimate = spend(100, 0.1);
    let mut racers = Vec::new();
    for i in 0..RACERS {
        let store = store.clone();
        let scopes = [user.clone(), project.clone()];
        racers.push(tokio::spawn(async move {
            let hold = format!("race-{i}");
            let reserved = store
                .reserve_budgets(&hold, &scopes, estimate, NOW, 0)
                .await
                .unwrap();
            if reserved == Reservation::Reserved {
                // Each call spends a little more than its estimate.
                store.settle_budgets(&hold, spend(110, 0.11)).await.unwrap();
                true
            } else {
                false
            }
        }));
    }
    let mut reserved = 0;
    for racer in racers {
        if racer.await.unwrap() {
            reserved += 1;
        }
    }
    let listed = store.budgets(&project, NOW).await.unwrap();
    let spent = listed[0].spent;
    assert_eq!(listed[0].reserved, 0.0);
    assert!(reserved >= 9, "only {reserved} calls were let through");
    // Never past the limit by more than one call's estimate.
    assert!(spent <= 1.0 + 0.1 + 1e-9, "{reserved} calls spent {spent}");
    assert!((spent - 0.11 * f64::from(reserved as u32)).abs() < 1e-9);
    let user_spent = store.budgets(&user, NOW).await.unwrap()[0].spent;
    assert_eq!(user_spent, 110.0 * reserved as f64);
}

const MINUTE_MS: i64 = 60_000;

/// A hold never settled (its process stopped mid-call) is released by a
/// later reservation on its budgets once it is older than the bound that
/// reservation gives; a late settlement still counts its spend.
pub async fn stale_holds_are_released_by_age(store: Arc<dyn Store>) {
    let project = BudgetScope::new(BudgetScopeKind::Project, "p1");
    let task = BudgetScope::new(BudgetScopeKind::Task, "t1");
    let schedule = BudgetScope::new(BudgetScopeKind::Schedule, "s1");
    store
        .set_budgets(
            &project,
            &[limit(BudgetMetric::Cost, BudgetPeriod::Total, 1.0)],
            NOW,
        )
        .await
        .unwrap();
    store
        .set_budgets(
            &task,
            &[limit(BudgetMetric::Tokens, BudgetPeriod::Total, 1000.0)],
            NOW,
        )
        .await
        .unwrap();
    store
        .set_budgets(
            &schedule,
            &[limit(BudgetMetric::Tokens, BudgetPeriod::Day, 50.0)],
            NOW,
        )
        .await
        .unwrap();
    let bound = 15 * MINUTE_MS;
    let reserve = |hold: &'static str, scopes: Vec<BudgetScope>, cost: f64, at: i64| {
        let store = store.clone();
        async move {
            store
                .reserve_budgets(hold, &scopes, spend(10, cost), at, at - bound)
                .await
                .unwrap()
        }
    };
    // A schedule's budget is one like the others.
    assert_eq!(
        reserve("s-big", vec![schedule.clone()], 0.0, NOW).await,
        Reservation::Reserved
    );
    let s = store.budgets(&schedule, NOW).await.unwrap();
    assert_eq!(
        (s[0].scope.clone(), s[0].reserved),
        (schedule.clone(), 10.0)
    );

    // The stopped call's hold, on the project and the task.
    assert_eq!(
        reserve("crashed", vec![project.clone(), task.clone()], 0.6, NOW).await,
        Reservation::Reserved
    );
    // A hold on the task only, as old: the project's reservations leave it.
    assert_eq!(
        reserve("task-only", vec![task.clone()], 0.0, NOW).await,
        Reservation::Reserved
    );
    // Younger than the bound: it still holds.
    assert_eq!(
        reserve("early", vec![project.clone()], 0.6, NOW + 14 * MINUTE_MS).await,
        Reservation::Refused {
            scope: project.clone(),
            limit: limit(BudgetMetric::Cost, BudgetPeriod::Total, 1.0),
        }
    );
    assert_eq!(store.budgets(&project, NOW).await.unwrap()[0].reserved, 0.6);

    // Past the bound, the next reservation on the project releases it
    // (whole: on the task too) and takes the room.
    let later = NOW + 16 * MINUTE_MS;
    assert_eq!(
        reserve("after", vec![project.clone()], 0.6, later).await,
        Reservation::Reserved
    );
    assert_eq!(
        store.budgets(&project, later).await.unwrap()[0].reserved,
        0.6
    );
    // The task's budget kept only the hold made on the task alone.
    assert_eq!(store.budgets(&task, later).await.unwrap()[0].reserved, 10.0);
    // A reservation on the schedule releases its own stale hold.
    assert_eq!(
        reserve("s-next", vec![schedule.clone()], 0.0, later).await,
        Reservation::Reserved
    );
    assert_eq!(
        store.budgets(&schedule, later).await.unwrap()[0].reserved,
        10.0
    );

    // The released call settles after all: its spend counts, and what
    // other calls hold stays.
    store
        .settle_budgets("crashed", spend(7, 0.25))
        .await
        .unwrap();
    let p = &store.budgets(&project, later).await.unwrap()[0];
    assert_eq!((p.spent, p.reserved), (0.25, 0.6));
    let t = &store.budgets(&task, later).await.unwrap()[0];
    assert_eq!((t.spent, t.reserved), (7.0, 10.0));
    // Settled once only.
    store
        .settle_budgets("crashed", spend(7, 0.25))
        .await
        .unwrap();
    assert_eq!(store.budgets(&project, later).await.unwrap()[0].spent, 0.25);
    // A reservation made inside the bound is never released.
    assert_eq!(
        reserve("again", vec![project.clone()], 0.1, later + MINUTE_MS).await,
        Reservation::Reserved
    );
    let p = &store.budgets(&project, later).await.unwrap()[0];
    assert!((p.reserved - 0.7).abs() < 1e-9, "{p:?}");
}
