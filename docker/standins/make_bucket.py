"""minio-init's stand-in: make the koholint bucket on the S3 stand-in (again is fine)."""

import os

import boto3

s3 = boto3.client(
    "s3",
    endpoint_url=os.environ.get("S3_ENDPOINT", "http://minio:9000"),
    aws_access_key_id=os.environ["MINIO_ROOT_USER"],
    aws_secret_access_key=os.environ["MINIO_ROOT_PASSWORD"],
    region_name="us-east-1",
)
bucket = os.environ.get("S3_BUCKET", "koholint")
if bucket not in {entry["Name"] for entry in s3.list_buckets().get("Buckets", [])}:
    s3.create_bucket(Bucket=bucket)
print(f"bucket {bucket} ready")
