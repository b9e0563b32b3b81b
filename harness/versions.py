"""Every pinned version of the system under test, in one place: changing one rebuilds the images."""

DEBIAN_SUITE = "bookworm"
DEBIAN_PACKAGES = (
    "openjdk-17-jre-headless",
    "python3",
    "python3-venv",
    "procps",
    "iproute2",
    "ca-certificates",
)

# Spark's Kafka connector must match pyspark exactly; 4.0.0 is the newest release whose
# connector and token-provider jars are both published (4.1+/4.2 lack the token provider).
PYSPARK = "4.0.0"
CONFLUENT_KAFKA = "2.16.1"
SCALA = "2.13"
SPARK_KAFKA_CONNECTOR = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA}:{PYSPARK}"

KAFKA = "4.1.1"
LOG4J = "2.24.3"

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
TOXIPROXY = "v2.12.0"


def image_python_requirements() -> list[str]:
    """The Python packages installed into every image's virtual environment."""
    return [f"pyspark=={PYSPARK}", f"confluent-kafka=={CONFLUENT_KAFKA}"]
