"""Card payments in several currencies, converted to euro cents and keyed by merchant.

A pipeline as a data team writes it: its own input, its own schema, no model. The harness judges its
output against fault-free runs of itself (the differential oracle).
"""

import json
import random

RATES = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "CHF": 1.05}


def workload(seed: int, n: int):
    """n payments as (key, value bytes, timestamp_ms): the same payments for the same seed."""
    rng = random.Random(seed)
    for i in range(n):
        merchant = f"m{rng.randrange(25):02d}"
        payment = {"payment_id": f"p{seed}-{i}", "merchant": merchant, "currency": rng.choice(sorted(RATES)),
                   "amount_cents": rng.randint(100, 500_000)}
        yield merchant, json.dumps(payment).encode(), 1_700_000_000_000 + i


def transform(source):  # import pyspark here: the harness loads this file on the host, without Spark
    from pyspark.sql import functions as F

    schema = "payment_id STRING, merchant STRING, currency STRING, amount_cents BIGINT"
    payments = source.select(F.from_json(F.col("value").cast("string"), schema).alias("p")).select("p.*")
    rate = F.create_map(*[F.lit(x) for pair in RATES.items() for x in pair])[F.col("currency")]
    euro = payments.withColumn("eur_cents", F.round(F.col("amount_cents") * rate).cast("long"))
    value = F.to_json(F.struct("payment_id", "merchant", "currency", "eur_cents"))
    return euro.select(F.col("merchant").alias("key"), value.alias("value"))
