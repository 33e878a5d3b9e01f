import django.db.models.deletion
from django.db import migrations, models


def names_from_members(apps, schema_editor):
    """Each member's one name so far: the one the owner typed (`named_as`),
    or their username (added by it, or by the link)."""
    ThreadMember = apps.get_model("workspace", "ThreadMember")
    ThreadMemberName = apps.get_model("workspace", "ThreadMemberName")
    rows = ThreadMember.objects.select_related("user").iterator(chunk_size=2000)
    batch = []
    for member in rows:
        batch.append(
            ThreadMemberName(
                member_id=member.pk,
                name=member.named_as or member.user.username,
                role=member.role,
                by_link=member.via_link,
            )
        )
        if len(batch) >= 2000:
            ThreadMemberName.objects.bulk_create(batch)
            batch = []
    ThreadMemberName.objects.bulk_create(batch)


def named_as_from_names(apps, schema_editor):
    ThreadMember = apps.get_model("workspace", "ThreadMember")
    for member in ThreadMember.objects.select_related("user").prefetch_related("names"):
        typed = [n.name for n in member.names.all() if not n.by_link and n.name != member.user.username]
        if typed:
            ThreadMember.objects.filter(pk=member.pk).update(named_as=typed[0])


class Migration(migrations.Migration):
    dependencies = [
        ("workspace", "0022_the_last_save_each_editor_page_had_written"),
    ]

    operations = [
        migrations.CreateModel(
            name="ThreadMemberName",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=254)),
                (
                    "role",
                    models.CharField(choices=[("viewer", "Viewer"), ("editor", "Editor")], default="viewer", max_length=6),
                ),
                ("by_link", models.BooleanField(default=False)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "member",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="names", to="workspace.threadmember"
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("member", "name", "by_link"), name="thread_member_name_unique")],
            },
        ),
        migrations.RunPython(names_from_members, named_as_from_names),
        migrations.RemoveField(model_name="threadmember", name="named_as"),
    ]
