"""REST endpoint for uploaded documents (version plans the tasklist agent reads)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from agentsite.api_docs import errors
from agentsite.token_auth import Scope
from workspace import services
from workspace.models import Document


class DocumentSerializer(serializers.ModelSerializer):
    ref = serializers.CharField(read_only=True)

    class Meta:
        model = Document
        fields = ["id", "name", "ref", "content", "created_at", "updated_at"]
        read_only_fields = ["id", "ref", "created_at", "updated_at"]
        # Uniqueness per owner is the service's business (upload replaces).
        validators: list = []


@extend_schema_view(
    list=extend_schema(responses={200: DocumentSerializer(many=True), **errors(401, 404)}),
    retrieve=extend_schema(responses={200: DocumentSerializer, **errors(401, 404)}),
    destroy=extend_schema(responses={204: None, **errors(401, 404)}),
)
class DocumentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin,
                      mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = DocumentSerializer
    queryset = Document.objects.none()  # for the schema; get_queryset scopes to the user
    # Uploading a plan prepares runs (agentsite.token_auth.TokenScope).
    token_scopes = {"create": Scope.START, "destroy": Scope.START}

    def get_queryset(self):
        return Document.objects.filter(owner=self.request.user)

    @extend_schema(request=DocumentSerializer,
                   responses={201: DocumentSerializer, **errors(400, 401, 404, 409, 415)})
    def create(self, request: Request) -> Response:
        """Upload a version plan (markdown); the same name again replaces it."""
        body = DocumentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        doc = services.document_upload(owner=request.user, name=body.validated_data["name"],
                                       content=body.validated_data["content"])
        return Response(DocumentSerializer(doc).data, status=status.HTTP_201_CREATED)
