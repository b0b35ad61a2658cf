"""Golden segments written by a real Apache Kafka broker, and how to remake them."""
